//! Logs made to hurt: found by fuzzing (fuzz/regressions/), kept here in
//! plain words.

use report::analysis::direction::MAX_BINS;
use report::Options;

/// Reports the Mahimahi log `text`, written to a file named `name` in a
/// directory of its own (removed again).
fn report_of(name: &str, text: &str) -> Vec<report::Run> {
    let dir = std::env::temp_dir().join(format!("emu-hostile-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    let runs = report::load(&path, &Options::default()).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    runs
}

/// A record time far in the future asked the report for one bin per
/// 100 ms up to it: billions of bins. Events beyond the report's horizon
/// are left out and said; the rest is reported.
#[test]
fn a_time_far_in_the_future_is_left_out_and_said() {
    let runs = report_of(
        "far.log",
        "# mahimahi mm-link (Uplink) [t] > far.log\n# base timestamp: 0\n\
         1 # 1504\n1 + 1504\n2 - 1504 1\n18446744073709 + 1504\n",
    );
    let summary = &runs[0].summary;
    assert!(
        summary
            .warnings
            .iter()
            .any(|w| w.contains("events lie more than") && w.contains(&format!("{MAX_BINS} bins"))),
        "{:?}",
        summary.warnings
    );
    assert_eq!(runs[0].series.len(), 1);
}

/// A Mahimahi drop line claiming thirteen billion packets had the report
/// share its bytes out packet by packet, for hours. A queue drops only what
/// it holds: the line is refused with its number, and what came before it
/// is reported.
#[test]
fn a_drop_of_more_packets_than_are_queued_is_refused() {
    let runs = report_of(
        "drop.log",
        "# mahimahi mm-link (Uplink) [t] > drop.log\n# base timestamp: 0\n\
         1 + 1504\n1 + 1504\n2 d 2 3008\n3 + 1504\n4 d 13291553641 1\n5 - 1504 2\n",
    );
    let summary = &runs[0].summary;
    let error = summary
        .errors
        .iter()
        .find(|e| e.contains("line 7"))
        .unwrap_or_else(|| panic!("no error names line 7: {:?}", summary.errors));
    assert!(
        error.contains("drops 13291553641 packets, but the log shows only 1 queued"),
        "{error}"
    );
}

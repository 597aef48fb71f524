//! Replays every committed fuzz input (the corpus each target grew and the
//! crashes it found, `fuzz/corpus/TARGET/` and `fuzz/regressions/TARGET/`)
//! through the same checks the fuzz targets run, so `cargo test` keeps
//! every parser honest on stable Rust without libFuzzer.

#[path = "../fuzz/checks.rs"]
mod checks;

use std::path::Path;

fn inputs(target: &str) -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for kind in ["corpus", "regressions"] {
        if let Ok(entries) = std::fs::read_dir(root.join(kind).join(target)) {
            files.extend(entries.filter_map(|e| e.ok()).map(|e| e.path()));
        }
    }
    files.sort();
    files
}

#[test]
fn every_committed_fuzz_input_passes_its_checks() {
    for (target, check) in checks::TARGETS {
        let files = inputs(target);
        assert!(
            !files.is_empty(),
            "no committed corpus for fuzz target {target}"
        );
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(
                outcome.is_ok(),
                "{target}: {} fails its checks",
                file.display()
            );
        }
    }
}

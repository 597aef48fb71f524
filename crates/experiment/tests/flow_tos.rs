//! A TCP flow's `tos`: the sender sets the DSCP (iperf3 --tos), and the
//! ECN bits stay its stack's, so a value with ECN bits is refused.

use experiment::file;
use std::path::Path;

mod support;

fn plan_of(flow_keys: &str) -> Result<file::Plan, String> {
    let text = format!(
        "[hosts.a]\nside = \"left\"\n[hosts.b]\nside = \"right\"\n\
         [[flows]]\nfrom = \"a\"\nto = \"b\"\n{flow_keys}\n"
    );
    support::plan_of("tos.toml", &text)
}

fn sender_argv(plan: &file::Plan) -> Vec<String> {
    experiment::run::flows::sender(plan, &plan.flows[0], Path::new("/tmp")).argv
}

#[test]
fn a_tcp_flows_tos_reaches_its_sender_and_ecn_bits_are_refused() {
    let plan = plan_of("tos = 0x10").unwrap();
    assert_eq!(plan.flows[0].tos, 16);
    let argv = sender_argv(&plan);
    let at = argv.iter().position(|a| a == "--tos").expect("--tos");
    assert_eq!(argv[at + 1], "16");
    let plain = plan_of("").unwrap();
    assert!(!sender_argv(&plain).contains(&"--tos".to_string()));
    let e = plan_of("tos = 0x11").unwrap_err();
    assert!(
        e.contains("flows.0.tos") && e.contains("ECN bits") && e.contains("0x10"),
        "{e}"
    );
    let e = plan_of("tos = 256").unwrap_err();
    assert!(
        e.contains("flows.0.tos") && e.contains("not a TOS byte"),
        "{e}"
    );
    let e = plan_of("kind = \"udp\"\nrate = \"1mbit\"\ntos = 0x10").unwrap_err();
    assert!(e.contains("tos"), "{e}");
}

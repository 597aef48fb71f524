//! Compiles the congestion controls and their helpers (`bpf/`: the shared
//! pieces in `endpoints.bpf.c`, which includes each control from `cc/`) with
//! clang into one BPF object that `src/object.rs` embeds, and the
//! algorithms' arithmetic (`bpf/arith/`, through `bpf/host.c`) for the host,
//! so the unit tests run the very code the kernel runs. A directory named
//! in `rerun-if-changed` is scanned whole, so `cc/` and `arith/` count.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let bpf_dir = PathBuf::from("bpf");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for entry in std::fs::read_dir(&bpf_dir).expect("crates/endpoints/bpf is part of the source") {
        let path = entry.expect("reading crates/endpoints/bpf").path();
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-env-changed=CLANG");

    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    let libbpf_headers = std::env::var("DEP_BPF_INCLUDE").expect("libbpf-sys names its headers");
    // Two objects, alike but for Prague's flags: one asks for AccECN, for
    // kernels that negotiate it; the other does not, for kernels that
    // refuse the flag. The loader picks one.
    for (name, defines) in [
        ("endpoints.bpf.o", &["-DEMU_PRAGUE_ACCECN=1"][..]),
        ("endpoints-rfc3168.bpf.o", &[][..]),
    ] {
        compile_bpf(&clang, &libbpf_headers, &bpf_dir, defines, &out.join(name));
    }

    cc::Build::new()
        .file(bpf_dir.join("host.c"))
        .include(&bpf_dir)
        .warnings(true)
        .compile("emu_algorithms");
}

/// Compiles `bpf/endpoints.bpf.c` (and the `cc/` files it includes) into
/// the BPF object `object`.
fn compile_bpf(
    clang: &str,
    libbpf_headers: &str,
    bpf_dir: &std::path::Path,
    defines: &[&str],
    object: &std::path::Path,
) {
    let mut command = Command::new(clang);
    command
        .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror"])
        .arg(format!("-D__TARGET_ARCH_{}", target_arch()))
        .args(defines)
        .arg("-I")
        .arg(bpf_dir)
        .arg("-I")
        .arg(libbpf_headers);
    // The kernel's UAPI headers (linux/bpf.h, ...) include <asm/types.h>,
    // which Debian and Ubuntu keep under the multiarch directory.
    if let Some(multiarch) = multiarch_include() {
        command.arg("-idirafter").arg(multiarch);
    }
    command
        .arg("-c")
        .arg(bpf_dir.join("endpoints.bpf.c"))
        .arg("-o")
        .arg(object);
    match command.status() {
        Ok(status) if status.success() => {}
        Ok(status) => panic!(
            "clang failed ({status}) compiling crates/endpoints/bpf/endpoints.bpf.c; its messages are above"
        ),
        Err(e) => panic!(
            "building emu's congestion controls needs clang ('{clang}': {e}): install it \
             (scripts/install-deps does; Debian and Ubuntu: apt-get install clang; \
             Fedora and RHEL: dnf install clang), or name it in CLANG"
        ),
    }
}

/// The architecture name the kernel's BPF headers expect.
fn target_arch() -> &'static str {
    match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("aarch64") => "arm64",
        Ok("riscv64") => "riscv",
        Ok("powerpc64") => "powerpc",
        Ok("s390x") => "s390",
        _ => "x86",
    }
}

/// `/usr/include/<multiarch triple>`, where it exists.
fn multiarch_include() -> Option<PathBuf> {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").ok()?;
    let triple = format!("{arch}-linux-gnu");
    let dir = PathBuf::from("/usr/include").join(triple);
    dir.is_dir().then_some(dir)
}

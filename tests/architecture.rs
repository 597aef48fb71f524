//! docs/architecture.md's crate graph against the manifests: each crate's
//! line in its edge list names exactly the workspace crates and the
//! external crates its Cargo.toml depends on, and every crate of the
//! workspace has a line. And no source file is longer than the house
//! limit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const WORKSPACE: [(&str, &str); 9] = [
    ("emu", "."),
    ("experiment", "crates/experiment"),
    ("endpoints", "crates/endpoints"),
    ("shells", "crates/shells"),
    ("fabric", "crates/fabric"),
    ("report", "crates/report"),
    ("link", "crates/link"),
    ("aqm", "crates/aqm"),
    ("emu-core", "crates/emu-core"),
];

/// A crate's dependencies: (workspace crates, external crates).
type Uses = (BTreeSet<String>, BTreeSet<String>);

/// The names under `[dependencies]` of the manifest in `dir`.
fn manifest_uses(dir: &Path) -> Uses {
    let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    let mut in_dependencies = false;
    let (mut workspace, mut external) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        if !in_dependencies || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap().to_string();
        if WORKSPACE.iter().any(|(crate_name, _)| *crate_name == name) {
            workspace.insert(name);
        } else {
            external.insert(name);
        }
    }
    (workspace, external)
}

/// The edge list of docs/architecture.md: `    NAME  → a, b  [x, y]`.
fn documented_uses(text: &str) -> BTreeMap<String, Uses> {
    let mut edges = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once('→') else {
            continue;
        };
        if !line.starts_with("    ") {
            continue;
        }
        let list = |s: &str| -> BTreeSet<String> {
            s.split(',')
                .map(|n| n.split(';').next().unwrap().trim().to_string())
                .filter(|n| !n.is_empty() && n != "none" && n != "(none)")
                .collect()
        };
        let (crates, external) = match rest.split_once('[') {
            Some((crates, external)) => (crates, external.trim_end().trim_end_matches(']')),
            None => (rest.split('(').next().unwrap(), ""),
        };
        edges.insert(name.trim().to_string(), (list(crates), list(external)));
    }
    edges
}

#[test]
fn the_documented_crate_graph_is_the_manifests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let documented = documented_uses(&doc);
    let mut wrong = Vec::new();
    for (name, dir) in WORKSPACE {
        let actual = manifest_uses(&root.join(dir));
        match documented.get(name) {
            None => wrong.push(format!("{name}: no line in the edge list")),
            Some(said) if *said != actual => wrong.push(format!(
                "{name}: the document says {said:?}, {dir}/Cargo.toml says {actual:?}"
            )),
            Some(_) => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's edge list is not the manifests':\n{}",
        wrong.join("\n")
    );
}

/// The longest a source file may be, its test module left out: past it a
/// file holds more than one job (split it by role, as `link/src/server.rs`
/// was split from `model.rs`).
const LONGEST_FILE: usize = 900;

/// Every source file under `dir`: Rust, and the C of the BPF programs
/// (`.c`, `.h`); test files (`tests.rs`, a `tests/` folder) left out.
fn source_files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if name != "tests" {
                source_files(&path, found);
            }
        } else if (name.ends_with(".rs") || name.ends_with(".c") || name.ends_with(".h"))
            && name != "tests.rs"
        {
            found.push(path);
        }
    }
}

#[test]
fn no_source_file_is_longer_than_the_house_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for (_, dir) in WORKSPACE {
        source_files(&root.join(dir).join("src"), &mut files);
    }
    let bpf = root.join("crates/endpoints/bpf");
    source_files(&bpf, &mut files);
    assert!(files.len() > 100, "found only {} source files", files.len());
    assert!(
        files.iter().any(|f| f.starts_with(&bpf)),
        "found no BPF source under {}",
        bpf.display()
    );
    let too_long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            let lines = text
                .lines()
                .take_while(|line| !line.starts_with("#[cfg(test)]"))
                .count();
            (lines > LONGEST_FILE).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(
        too_long.is_empty(),
        "over {LONGEST_FILE} lines without their tests: {too_long:?}"
    );
}

/// Every file docs/architecture.md names in backquotes (`report/src/...`,
/// `src/cli/...`, `crates/.../tests/...`) is there: a file moved or
/// removed takes its line in the doc with it. Names with a placeholder
/// (`bpf/cc/NAME.c`) stand for a kind of file and are left out.
#[test]
fn the_files_the_architecture_names_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let named: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| {
            quoted.contains('/')
                && [".rs", ".c", ".h", ".py", ".md"]
                    .iter()
                    .any(|ext| quoted.ends_with(ext))
                && quoted
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_-./".contains(c))
        })
        .collect();
    assert!(named.len() > 50, "found only {} file names", named.len());
    // A name is the repository's, or a crate's, or a crate's source's.
    let mut bases = vec![root.to_path_buf(), root.join("crates"), root.join("docs")];
    for (_, dir) in WORKSPACE {
        bases.extend([root.join(dir), root.join(dir).join("src")]);
    }
    let missing: Vec<&str> = named
        .into_iter()
        .filter(|name| bases.iter().all(|base| !base.join(name).exists()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md names files that are not there: {missing:?}"
    );
}

/// The maps of docs/architecture.md's "Inside" sections (`crates/NAME/src/`
/// and the folders and files under it) name files that are there.
#[test]
fn the_maps_of_each_crate_name_its_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut missing = Vec::new();
    let mut checked = 0;
    let mut map: Option<std::path::PathBuf> = None;
    let mut folder = (String::new(), 0);
    for line in doc.lines() {
        let indent = line.len() - line.trim_start().len();
        let first = line.split_whitespace().next().unwrap_or("");
        if indent == 4 && first.starts_with("crates/") && first.ends_with("/src/") {
            map = Some(root.join(first));
            folder = (String::new(), 0);
            continue;
        }
        let Some(src) = &map else { continue };
        if indent < 6 {
            map = None;
            continue;
        }
        if first.ends_with('/') {
            folder = (first.to_string(), indent);
        } else if indent <= folder.1 {
            folder = (String::new(), 0);
        }
        for name in line.split_whitespace().filter(|w| w.ends_with(".rs")) {
            checked += 1;
            if !src.join(&folder.0).join(name).exists() {
                missing.push(format!("{}{name}", folder.0));
            }
        }
    }
    assert!(checked > 80, "read only {checked} file names in the maps");
    assert!(
        missing.is_empty(),
        "the maps name files that are not there: {missing:?}"
    );
}

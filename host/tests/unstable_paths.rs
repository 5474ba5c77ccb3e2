//! The crate builds without its `unstable-raw` feature: the names `lib.rs`
//! re-exports only under that feature are never the paths the crate's own
//! code (or its docs' links) goes through. Every build in the test command
//! turns the feature on (host-test asks for it), so without this check a
//! `crate::raw::…` in the API would break only the builds users make: the
//! command line installed from the registry, the release wheel, the Node
//! addon.

use std::fs;
use std::path::Path;

/// The names after `#[cfg(feature = "unstable-raw")] pub use engine::{…};`.
fn gated_names(lib: &str) -> Vec<String> {
    let mut lines = lib.lines();
    let mut names = Vec::new();
    while let Some(line) = lines.next() {
        if line.trim() != "#[cfg(feature = \"unstable-raw\")]" {
            continue;
        }
        let Some(item) = lines.next() else { break };
        if let Some(list) = item
            .trim()
            .strip_prefix("pub use engine::{")
            .and_then(|rest| rest.strip_suffix("};"))
        {
            names.extend(list.split(',').map(|n| n.trim().to_string()));
        }
    }
    names
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_code_goes_through_a_name_only_the_feature_exports() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let names = gated_names(&fs::read_to_string(src.join("lib.rs")).unwrap());
    assert!(
        names.contains(&"raw".to_string()),
        "lib.rs's gated re-export not found: {names:?}"
    );
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            for name in &names {
                if line.contains(&format!("crate::{name}::")) {
                    found.push(format!(
                        "{}:{}: {}",
                        file.display(),
                        number + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "these go through names lib.rs exports only with unstable-raw \
         (name them through crate::engine instead):\n{}",
        found.join("\n")
    );
}

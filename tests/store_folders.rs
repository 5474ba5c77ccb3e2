//! A store is a folder. Adding one should touch that store's own files and a
//! short list of registries (the contract, the component's conversion, the
//! host's seam and builder list, the command line's store table, the guest
//! crate's), not code all over every crate. Read from the sources: for each
//! store other than S3, the product files that name it outside its own
//! files are counted, and more than `LIMIT` fail here with their list.
//!
//! Product files: the `.rs` and `.wit` files of the component, keep, the
//! host, the command line, the guest crate and the gate, their tests and
//! the test-only `testing` tree left out. A store's own files: anything in a
//! `stores/<store>/` folder (or `stores/<store>.rs`), and files or folders
//! under a `config/` or `credentials/` folder whose name starts with the
//! store's. Comments count: a store's behaviour described in generic code is
//! knowledge kept outside its folder.
//!
//! Also read: no `_ =>` arm in a `match` over a store or credential enum, so
//! a new store is a compile error wherever a choice is made, not a silent
//! default.

use std::fs;
use std::path::{Path, PathBuf};

/// The most product files that may name a store outside its own files.
const LIMIT: usize = 10;

struct StoreNames {
    /// The folder and file name its own files start with.
    folder: &'static str,
    /// Words (lower case) whose presence names the store.
    words: &'static [&'static str],
}

const STORES: &[StoreNames] = &[
    StoreNames {
        folder: "dynamodb",
        words: &["dynamo"],
    },
    StoreNames {
        folder: "azure",
        words: &["azure"],
    },
    StoreNames {
        folder: "gcs",
        words: &["gcs", "google"],
    },
];

const PRODUCT_ROOTS: &[&str] = &[
    "src",
    "keep/src",
    "host/src",
    "cli/src",
    "guest/src",
    "gate/src",
    "wit",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "tests" | "deps" | "testing") {
                collect(&path, out);
            }
        } else if (name.ends_with(".rs") || name.ends_with(".wit"))
            && name != "tests.rs"
            && !name.ends_with("_tests.rs")
            && !name.starts_with("test_")
        {
            out.push(path);
        }
    }
}

/// Paths relative to the repository, with `/`.
fn product_files() -> Vec<String> {
    let root = root();
    let mut files = Vec::new();
    for dir in PRODUCT_ROOTS {
        collect(&root.join(dir), &mut files);
    }
    let mut names: Vec<String> = files
        .iter()
        .map(|p| {
            p.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    names.sort();
    names
}

fn is_own(path: &str, store: &StoreNames) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.windows(2).any(|pair| match pair {
        ["stores", name] => *name == store.folder || *name == format!("{}.rs", store.folder),
        ["config" | "credentials", name] => name.starts_with(store.folder),
        _ => false,
    })
}

fn naming(store: &StoreNames, files: &[String]) -> Vec<String> {
    let root = root();
    files
        .iter()
        .filter(|path| !is_own(path, store))
        .filter(|path| {
            let text = fs::read_to_string(root.join(path)).unwrap().to_lowercase();
            store.words.iter().any(|word| text.contains(word))
        })
        .cloned()
        .collect()
}

#[test]
fn each_store_is_named_in_few_files_outside_its_own() {
    let files = product_files();
    assert!(files.len() > 100, "read only {} product files", files.len());
    let mut over = Vec::new();
    for store in STORES {
        let named = naming(store, &files);
        println!(
            "{}: {} files\n  {}",
            store.folder,
            named.len(),
            named.join("\n  ")
        );
        if named.len() > LIMIT {
            over.push(format!(
                "{} is named in {} product files outside its own (at most {LIMIT}):\n  {}",
                store.folder,
                named.len(),
                named.join("\n  ")
            ));
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

#[test]
fn the_count_sees_a_store_named_outside_its_folder() {
    let store = &STORES[0];
    assert!(is_own("src/stores/dynamodb/item.rs", store));
    assert!(is_own("host/src/config/dynamodb.rs", store));
    assert!(is_own("host/src/credentials/azure/token.rs", &STORES[1]));
    assert!(is_own("guest/src/config/azure_blob.rs", &STORES[1]));
    assert!(!is_own("src/strategy/floor.rs", store));
    assert!(!is_own("src/stores/mod.rs", store));
    assert!(!is_own("host/src/config/mod.rs", store));
    let named = naming(store, &["wit/lease.wit".to_string()]);
    assert_eq!(named, ["wit/lease.wit"], "the contract names every store");
}

/// Enums whose cases are stores or their credentials.
const STORE_ENUMS: &[&str] = &[
    "Store::",
    "StoreKind::",
    "StoreConfig::",
    "Credential::",
    "StoreSpec::",
];

/// `_ =>` arms of matches that also have an arm naming a store enum's case.
fn wildcard_arms_over_stores(text: &str) -> Vec<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if !trimmed.starts_with("_ =>") {
            continue;
        }
        let indent = line.len() - trimmed.len();
        // The arms before it at the same indentation, up to the `match`.
        for earlier in lines[..at].iter().rev() {
            let t = earlier.trim_start();
            let earlier_indent = earlier.len() - t.len();
            if earlier_indent < indent {
                break;
            }
            if earlier_indent == indent
                && t.contains("=>")
                && STORE_ENUMS.iter().any(|e| t.contains(e))
            {
                found.push(at + 1);
                break;
            }
        }
    }
    found
}

#[test]
fn no_wildcard_arm_over_a_store_enum() {
    let root = root();
    let mut arms = Vec::new();
    for path in product_files().iter().filter(|p| p.ends_with(".rs")) {
        let text = fs::read_to_string(root.join(path)).unwrap();
        // Code before an inline test module (`mod tests;` elsewhere is read on).
        let text = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or("");
        for line in wildcard_arms_over_stores(text) {
            arms.push(format!("{path}:{line}"));
        }
    }
    assert!(arms.is_empty(), "`_ =>` over a store enum: {arms:?}");
}

#[test]
fn the_wildcard_check_sees_one() {
    let code = "match store {\n    Store::S3(b) => 1,\n    _ => 2,\n}\n";
    assert_eq!(wildcard_arms_over_stores(code), [3]);
    let fine = "match kind {\n    Kind::A => 1,\n    _ => 2,\n}\n";
    assert!(wildcard_arms_over_stores(fine).is_empty());
}

//! The size limit on production code: no source file of a crate holds more
//! than 900 lines of it, so each stays one concern a reader can hold. An
//! inline test module (`#[cfg(test)]` then `mod … {`) and the files test
//! modules are kept in (`tests.rs`, `*_tests.rs`) are not counted. The limit on a function's length
//! (120 lines of code) is clippy's `too_many_lines`, denied outside the
//! tests in each crate's root with its threshold in `clippy.toml`.

use std::path::{Path, PathBuf};

const MAX_PRODUCTION_LINES: usize = 900;

/// The crates' source folders: what ships (test support and the tests
/// themselves aside).
const SOURCE_DIRS: [&str; 5] = [
    "classify-wasm/src",
    "bindings/wasm/src",
    "server/src",
    "emulator/src",
    "web/src",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The lines of `text` before its inline test module, if it has one.
fn production_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .position(|pair| {
            let next = pair[1].trim_start_matches("pub(crate) ");
            pair[0] == "#[cfg(test)]" && next.starts_with("mod ") && next.ends_with('{')
        })
        .unwrap_or(lines.len())
}

#[test]
fn test_modules_are_not_counted() {
    let text = "fn a() {}\nfn b() {}\n#[cfg(test)]\nmod tests {\n    fn c() {}\n}\n";
    assert_eq!(production_lines(text), 2);
    // A test module in a file of its own leaves only its declaration.
    let text = "fn a() {}\n#[cfg(test)]\n#[path = \"a_tests.rs\"]\nmod tests;\n";
    assert_eq!(production_lines(text), 4);
}

#[test]
fn no_source_file_holds_more_than_900_lines_of_production_code() {
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(
        files.len() > 100,
        "the source folders: {} files",
        files.len()
    );
    let mut over: Vec<String> = files
        .iter()
        .filter(|path| {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            !name.is_some_and(|n| n == "tests.rs" || n.ends_with("_tests.rs"))
        })
        .filter_map(|path| {
            let text = std::fs::read_to_string(path).expect("a source file");
            let lines = production_lines(&text);
            let shown = path.strip_prefix(root()).unwrap_or(path).display();
            (lines > MAX_PRODUCTION_LINES).then(|| format!("{shown}: {lines}"))
        })
        .collect();
    over.sort();
    assert!(
        over.is_empty(),
        "over {MAX_PRODUCTION_LINES} lines: {over:#?}"
    );
}

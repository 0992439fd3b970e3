//! Embeds the golden case files for the wasm test run (tests/wasm.rs), where
//! there is no filesystem: `../shared/cases`, `../shared/dumps`, and the
//! engine's `classify-wasm/cases` and `classify-wasm/queue-cases`. The
//! engine's native tests read the same folders at test time instead. The library never includes the generated
//! file.

use std::path::{Path, PathBuf};
use std::{env, fs};

fn case_files(dir: &Path, out: &mut Vec<(String, PathBuf)>, label: &str) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if matches!(ext, "json" | "yaml" | "yml") {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            out.push((format!("{label}/{name}"), path.clone()));
        }
    }
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo:rerun-if-env-changed=DISPATCH_SHARED");
    let shared = env::var_os("DISPATCH_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../../shared"));
    let mut files = Vec::new();
    case_files(&shared.join("cases"), &mut files, "shared/cases");
    case_files(&shared.join("dumps"), &mut files, "shared/dumps");
    case_files(
        &manifest.join("../../classify-wasm/cases"),
        &mut files,
        "cases",
    );
    case_files(
        &manifest.join("../../classify-wasm/queue-cases"),
        &mut files,
        "queue-cases",
    );
    let mut code = String::from("pub const EMBEDDED: &[(&str, &str)] = &[\n");
    for (name, path) in files {
        code.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    code.push_str("];\n");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap_or_default()).join("embedded_cases.rs");
    fs::write(out, code).expect("OUT_DIR is writable");
}

//! The user documentation agrees with the binary and with itself:
//! - every flag `dispatch-dash serve --help` prints has a row in
//!   `docs/deploy.md`'s flag table, with the same default, and every row
//!   names a flag the binary has;
//! - every relative link in README.md, ARCHITECTURE.md and docs/ names a
//!   file that exists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A flag as `--help` prints it: its long name and its default, if any.
#[derive(Debug, PartialEq)]
struct HelpFlag {
    default: Option<String>,
}

/// Reads clap's long help: a flag line starts, after indentation, with
/// `-x, --name` or `--name`; `[default: …]` below it, before the next flag
/// line, is its default.
fn parse_help(help: &str) -> BTreeMap<String, HelpFlag> {
    let mut flags = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in help.lines() {
        let trimmed = line.trim_start();
        let flag_part = trimmed
            .strip_prefix('-')
            .filter(|rest| !rest.starts_with('-'))
            .and_then(|rest| rest.split_once(", "))
            .map_or(trimmed, |(_, after)| after);
        if line.starts_with(' ') && flag_part.starts_with("--") {
            let name: String = flag_part
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '=' && *c != '<')
                .collect();
            flags.insert(name.clone(), HelpFlag { default: None });
            current = Some(name);
        } else if let Some(start) = trimmed.find("[default: ") {
            let rest = &trimmed[start + "[default: ".len()..];
            let value = rest.split(']').next().unwrap_or(rest).to_string();
            if let Some(flag) = current.as_ref().and_then(|name| flags.get_mut(name)) {
                flag.default = Some(value);
            }
        }
    }
    flags.remove("--help");
    flags
}

/// The rows of `docs/deploy.md`'s flag table: the first flag named in the
/// first cell, and the second cell (the default).
fn parse_doc_table(doc: &str) -> BTreeMap<String, String> {
    let mut rows = BTreeMap::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(first), Some(default)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Some(flag) = first
            .split('`')
            .nth(1)
            .filter(|name| name.starts_with("--"))
        else {
            continue;
        };
        rows.insert(flag.to_string(), default.trim_matches('`').to_string());
    }
    rows
}

fn serve_help() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dispatch-dash"))
        .args(["serve", "--help"])
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "serve --help failed: {out:?}");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

#[test]
fn every_serve_flag_and_default_is_in_the_deploy_doc() {
    let help = parse_help(&serve_help());
    assert!(
        help.len() >= 30 && help.contains_key("--listen") && help.contains_key("--demo-users"),
        "the help parser found too few flags: {:?}",
        help.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        help.get("--listen").and_then(|f| f.default.as_deref()),
        Some("127.0.0.1:8080"),
        "the help parser reads defaults"
    );
    let doc_path = repo().join("docs/deploy.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/deploy.md exists");
    let table = parse_doc_table(&doc);

    let mut problems = Vec::new();
    for (name, flag) in &help {
        match (table.get(name), &flag.default) {
            (None, _) => problems.push(format!("{name} is in `serve --help` but not in docs/deploy.md")),
            (Some(documented), Some(default)) if documented != default => problems.push(format!(
                "{name}: `serve --help` says the default is {default:?}, docs/deploy.md says {documented:?}"
            )),
            _ => {}
        }
    }
    for name in table.keys().filter(|name| !help.contains_key(*name)) {
        problems.push(format!(
            "docs/deploy.md documents {name}, which `serve --help` does not have"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_help_parser_reads_short_flags_defaults_and_values() {
    let help = "Usage: dispatch-dash serve [OPTIONS]\n\nOptions:\n      --listen <LISTEN>\n          Address to listen on\n\n          [default: 127.0.0.1:8080]\n\n  -n, --namespace <NAMESPACES>\n          A namespace\n\n      --demo-kueue <DEMO_KUEUE>\n          Kueue\n\n          [default: true]\n          [possible values: true, false]\n\n  -h, --help\n          Print help\n";
    let flags = parse_help(help);
    assert_eq!(flags.len(), 3, "{flags:?}");
    assert_eq!(flags["--listen"].default.as_deref(), Some("127.0.0.1:8080"));
    assert_eq!(flags["--namespace"].default, None);
    assert_eq!(flags["--demo-kueue"].default.as_deref(), Some("true"));
}

/// Every `](target)` link in Markdown that is not a URL or an anchor.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("](") {
        rest = &rest[start + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        if !target.contains("://") && !target.starts_with('#') && !target.starts_with("mailto:") {
            links.push(target.split('#').next().unwrap_or(target).to_string());
        }
        rest = &rest[end..];
    }
    links
}

#[test]
fn every_relative_link_in_the_docs_names_a_file() {
    let root = repo();
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/ exists") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            files.push(path);
        }
    }
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable");
        let dir = file.parent().unwrap_or(Path::new("."));
        for link in relative_links(&text) {
            checked += 1;
            if !dir.join(&link).exists() {
                missing.push(format!("{}: {link}", file.display()));
            }
        }
    }
    assert!(
        checked >= 10,
        "only {checked} links found: the link reader is broken"
    );
    assert!(
        missing.is_empty(),
        "links to missing files:\n{}",
        missing.join("\n")
    );
}

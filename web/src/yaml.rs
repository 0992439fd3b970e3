//! A small JSON to YAML writer for the explanation's object view. Strings
//! that YAML would read as something else (numbers, booleans, null, text
//! with indicators or line breaks) are written as JSON strings, which are
//! valid YAML double-quoted scalars.

use serde_json::Value;

fn plain_ok(s: &str) -> bool {
    if s.is_empty() || s.trim() != s {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "null" | "~" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n"
    ) {
        return false;
    }
    if s.parse::<f64>().is_ok()
        || s.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '+' || c == '-')
    {
        return false;
    }
    let first = s.chars().next().unwrap_or(' ');
    if "-?:,[]{}#&*!|>'\"%@`".contains(first) {
        return false;
    }
    !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && !s.chars().any(|c| c.is_control())
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if plain_ok(s) => s.clone(),
        other => other.to_string(),
    }
}

fn key(k: &str) -> String {
    if plain_ok(k) {
        k.to_string()
    } else {
        Value::from(k).to_string()
    }
}

fn write(out: &mut String, v: &Value, indent: usize) {
    let pad = "  ".repeat(indent);
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, val) in m {
                out.push_str(&pad);
                out.push_str(&key(k));
                out.push(':');
                match val {
                    Value::Object(x) if !x.is_empty() => {
                        out.push('\n');
                        write(out, val, indent + 1);
                    }
                    Value::Array(x) if !x.is_empty() => {
                        out.push('\n');
                        write(out, val, indent);
                    }
                    _ => {
                        out.push(' ');
                        out.push_str(&inline(val));
                        out.push('\n');
                    }
                }
            }
        }
        Value::Array(a) if !a.is_empty() => {
            for item in a {
                out.push_str(&pad);
                out.push_str("- ");
                match item {
                    Value::Object(x) if !x.is_empty() => {
                        let mut inner = String::new();
                        write(&mut inner, item, indent + 1);
                        // The first line goes after the dash.
                        out.push_str(inner.trim_start());
                    }
                    Value::Array(x) if !x.is_empty() => {
                        out.pop();
                        out.push('\n');
                        write(out, item, indent + 1);
                    }
                    _ => {
                        out.push_str(&inline(item));
                        out.push('\n');
                    }
                }
            }
        }
        other => {
            out.push_str(&pad);
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

fn inline(v: &Value) -> String {
    match v {
        Value::Object(m) if m.is_empty() => "{}".into(),
        Value::Array(a) if a.is_empty() => "[]".into(),
        other => scalar(other),
    }
}

/// One YAML document for a JSON value.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    write(&mut out, v, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[test]
    #[wasm_bindgen_test]
    fn writes_nested_values() {
        let v = json!({
            "kind": "Pod",
            "metadata": {"name": "p-0", "labels": {"a/b": "2", "c": "true"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "empty": [], "none": null},
            "list": [[1, 2], "x: y", "multi\nline"]
        });
        let y = to_yaml(&v);
        assert_eq!(
            y,
            "kind: Pod\nlist:\n-\n  - 1\n  - 2\n- \"x: y\"\n- \"multi\\nline\"\nmetadata:\n  labels:\n    a/b: \"2\"\n    c: \"true\"\n  name: p-0\nstatus:\n  conditions:\n  - status: \"True\"\n    type: Ready\n  empty: []\n  none: null\n"
        );
    }
}

//! What the server says about itself (`GET /api/v1/namespaces`): the
//! namespaces to pick from, and whether the cluster is the embedded,
//! simulated one, which the page must say plainly.

use serde_json::Value;

/// The parts of the server's `namespaces` answer the page shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerInfo {
    /// The namespaces the user can open, in the server's order.
    pub namespaces: Vec<String>,
    /// The jobs come from the embedded demo cluster, not a real one.
    pub demo: bool,
}

impl ServerInfo {
    /// Reads the answer's JSON text.
    pub fn parse(text: &str) -> Result<ServerInfo, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let namespaces = value
            .get("namespaces")
            .and_then(Value::as_array)
            .ok_or_else(|| "the server's answer lists no namespaces".to_string())?
            .iter()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect();
        Ok(ServerInfo {
            namespaces,
            demo: value.get("demo").and_then(Value::as_bool).unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[test]
    #[wasm_bindgen_test]
    fn reads_namespaces_and_the_demo_flag() {
        let info = ServerInfo::parse(
            r#"{"namespaces":["team-a","team-b"],"allNamespaces":false,"mode":"kueue","demo":true}"#,
        )
        .expect("valid");
        assert_eq!(info.namespaces, ["team-a", "team-b"]);
        assert!(info.demo);
        let real = ServerInfo::parse(r#"{"namespaces":[]}"#).expect("valid");
        assert!(
            !real.demo,
            "a server that does not say demo is a real cluster"
        );
    }

    #[test]
    #[wasm_bindgen_test]
    fn an_answer_without_namespaces_is_an_error() {
        assert!(ServerInfo::parse(r#"{"error":"unauthorized"}"#).is_err());
        assert!(ServerInfo::parse("not json").is_err());
    }
}

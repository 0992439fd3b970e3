//! `--demo-users FILE`: people for the embedded cluster, so that
//! `--demo --auth kubernetes` can be tried (and tested) as a team would use
//! it: each line gives a token, the user it stands for, and the namespaces
//! that user may read. The embedded cluster's TokenReviews then know the
//! token, and its SubjectAccessReviews allow that user `get`, `list` and
//! `watch` of TrainJobs and pods in those namespaces, and nothing else.
//!
//! The file, not the command line, holds the tokens, so they stay out of
//! the process list. Format, one user per line:
//!
//! ```text
//! # token   user   namespaces
//! s3cret-a  alice  team-a
//! s3cret-o  olga   team-a,team-b
//! ```
//!
//! Blank lines and lines starting with `#` are skipped.

use std::path::{Path, PathBuf};

/// One line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoUser {
    /// The bearer token (redacted from `Debug`).
    pub token: super::auth::Secret,
    /// The user name TokenReviews give for it.
    pub name: String,
    /// The namespaces the user may read.
    pub namespaces: Vec<String>,
}

/// Why the file was refused: which file, which line, what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read.
    #[error("reading the demo users file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not `TOKEN USER NAMESPACE[,NAMESPACE...]`.
    #[error("{path}:{line}:{column}: {what}")]
    Line {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// The column of the offending field, from 1.
        column: usize,
        /// What is wrong.
        what: String,
    },
}

/// Reads and parses the file.
pub fn read(path: &Path) -> Result<Vec<DemoUser>, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text)
}

/// Parses the file's text; `path` names it in errors.
pub fn parse(path: &Path, text: &str) -> Result<Vec<DemoUser>, Error> {
    let mut users: Vec<DemoUser> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let fail = |column: usize, what: String| Error::Line {
            path: path.to_path_buf(),
            line: index + 1,
            column,
            what,
        };
        // Fields with the column each starts at (1-based, in characters).
        let mut fields = Vec::new();
        let mut start = None;
        for (i, (byte, c)) in line.char_indices().enumerate() {
            match (c.is_whitespace(), start) {
                (false, None) => start = Some((i + 1, byte)),
                (true, Some((column, from))) => {
                    fields.push((column, &line[from..byte]));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some((column, from)) = start {
            fields.push((column, &line[from..]));
        }
        let end = line.chars().count() + 1;
        let [(_, token), (name_column, name), (ns_column, namespaces)] = fields[..] else {
            let column = fields.get(3).map_or(end, |f| f.0);
            return Err(fail(
                column,
                format!(
                    "expected `TOKEN USER NAMESPACE[,NAMESPACE...]`, found {} field(s)",
                    fields.len()
                ),
            ));
        };
        if let Some(other) = users.iter().find(|u| u.token.expose() == token) {
            return Err(fail(1, format!("this token is already {}'s", other.name)));
        }
        let _ = name_column;
        let mut list = Vec::new();
        for ns in namespaces.split(',') {
            if ns.is_empty() {
                return Err(fail(ns_column, "an empty namespace in the list".into()));
            }
            list.push(ns.to_string());
        }
        users.push(DemoUser {
            token: token.into(),
            name: name.to_string(),
            namespaces: list,
        });
    }
    Ok(users)
}

/// What `user` may do: `get`, `list` and `watch` of TrainJobs and pods in
/// each of their namespaces, which is what a namespace needs to be shown,
/// and of LocalQueues there, with `get` of their pending Workloads in
/// Kueue's visibility API; and `get` of every ClusterQueue, as a
/// cluster's viewer role grants, so the demo's queue facts show the quota.
pub fn grants(user: &DemoUser) -> Vec<emulator::Grant> {
    let mut out = Vec::new();
    for ns in &user.namespaces {
        for (group, resource) in [
            ("trainer.kubeflow.org", "trainjobs"),
            ("", "pods"),
            ("kueue.x-k8s.io", "localqueues"),
        ] {
            for verb in ["get", "list", "watch"] {
                out.push(emulator::Grant::namespaced(
                    &user.name, verb, group, resource, ns,
                ));
            }
        }
        // The place in line, as Kueue's own user roles grant it.
        out.push(emulator::Grant::namespaced(
            &user.name,
            "get",
            crate::serve::auth::VISIBILITY_GROUP,
            "localqueues/pendingworkloads",
            ns,
        ));
    }
    out.push(emulator::Grant::cluster_wide(
        &user.name,
        "get",
        "kueue.x-k8s.io",
        "clusterqueues",
    ));
    out
}

/// Teaches the embedded cluster these users: their tokens and [`grants`].
pub fn install(emulator: &emulator::Emulator, users: &[DemoUser]) {
    for user in users {
        emulator.set_user(user.token.expose(), &user.name, &[]);
        for grant in grants(user) {
            emulator.grant(grant);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<DemoUser>, String> {
        parse(Path::new("users.txt"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn users_with_their_namespaces_skipping_comments_and_blank_lines() {
        let users =
            parsed("# token user namespaces\n\ns-a  alice team-a\n\ts-o olga team-a,team-b\n")
                .expect("valid");
        assert_eq!(
            users,
            [
                DemoUser {
                    token: "s-a".into(),
                    name: "alice".into(),
                    namespaces: vec!["team-a".into()]
                },
                DemoUser {
                    token: "s-o".into(),
                    name: "olga".into(),
                    namespaces: vec!["team-a".into(), "team-b".into()]
                },
            ]
        );
    }

    #[test]
    fn a_bad_line_is_named_with_its_line_and_column() {
        assert_eq!(
            parsed("s-a alice team-a\ns-b bob\n").unwrap_err(),
            "users.txt:2:8: expected `TOKEN USER NAMESPACE[,NAMESPACE...]`, found 2 field(s)"
        );
        assert_eq!(
            parsed("s-a alice team-a extra\n").unwrap_err(),
            "users.txt:1:18: expected `TOKEN USER NAMESPACE[,NAMESPACE...]`, found 4 field(s)"
        );
        assert_eq!(
            parsed("s-a alice team-a,,team-b\n").unwrap_err(),
            "users.txt:1:11: an empty namespace in the list"
        );
        assert_eq!(
            parsed("s-a alice team-a\ns-a bob team-b\n").unwrap_err(),
            "users.txt:2:1: this token is already alice's"
        );
    }

    #[test]
    fn a_user_may_read_trainjobs_pods_and_local_queues_in_their_namespaces_only() {
        let users = parsed("s-o olga team-a,team-b\n").expect("valid");
        let granted: Vec<(String, String, String)> = grants(&users[0])
            .into_iter()
            .map(|g| match g.target {
                emulator::GrantTarget::Resource {
                    resource,
                    namespace,
                    ..
                } => (g.verb, resource, namespace.unwrap_or("*".into())),
                other => panic!("only resource grants: {other:?}"),
            })
            .collect();
        let mut want = Vec::new();
        for ns in ["team-a", "team-b"] {
            for resource in ["trainjobs", "pods", "localqueues"] {
                for verb in ["get", "list", "watch"] {
                    want.push((verb.to_string(), resource.to_string(), ns.to_string()));
                }
            }
            want.push((
                "get".into(),
                "localqueues/pendingworkloads".into(),
                ns.to_string(),
            ));
        }
        // The one cluster-wide grant: reading a ClusterQueue's quota.
        want.push(("get".into(), "clusterqueues".into(), "*".into()));
        assert_eq!(granted, want);
        assert!(grants(&users[0]).iter().all(|g| g.subject == "olga"));
    }
}

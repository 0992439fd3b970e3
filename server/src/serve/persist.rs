//! `serve --state-dir DIR`: the evidence that must survive a restart, in an
//! embedded SQLite database (`DIR/state.db`).
//!
//! What it keeps, mirroring the store and the history:
//!
//! - the last seen state (projection) of every Pod and TrainJob, so that a
//!   pod deleted while the server was down is captured across the gap on
//!   the first list after start, exactly as after a `410 Gone` (the
//!   TrainJobs are kept so the pods' TrainJobs are known even when the pods
//!   are listed first);
//! - which TrainJob UID each pod belonged to (orphans across time);
//! - the captured pods, in capture order;
//! - each object's observation history, and what last preempted it.
//!
//! How: one [`StateDir`] owns the connection. The hub turns what a batch of
//! watch events changed into [`Op`]s and writes them with
//! [`StateDir::write`], one transaction per batch, while it holds the
//! store's lock and before it publishes the change, so what a client saw
//! is on disk. The database is WAL with `synchronous=NORMAL`: a committed
//! batch survives the process being killed (not necessarily a power cut,
//! which loses at most the last batches, never consistency).
//!
//! Safety: the schema is versioned (`PRAGMA user_version`), and a file of
//! an older version is migrated in place at open; a file of a newer version, one that is not a database (or fails `quick_check`), or
//! one another process holds (`locking_mode=EXCLUSIVE`, taken at open with
//! a write, so a second server fails at once instead of waiting) is an
//! [`Error`] naming the file. Nothing is ever deleted to recover.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{params, Connection, ErrorCode, OpenFlags, Statement, ToSql, Transaction};
use serde_json::Value;

use super::history::{Change, HistoryKey, ObjectHistory};
use super::projection::{ApiObject, ObjectKind, Projected, StoredObject};
use super::store::CapturedPod;

/// The schema version this binary writes and reads.
pub const SCHEMA_VERSION: i64 = 2;

/// Bytes of write-ahead log kept after a checkpoint.
const WAL_BYTES_KEPT: i64 = 8 * 1024 * 1024;

/// The database's file name inside the state directory.
pub const FILE_NAME: &str = "state.db";

const SCHEMA: &str = "
CREATE TABLE objects (
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    json TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
) WITHOUT ROWID;
CREATE TABLE pod_owners (
    pod_uid TEXT PRIMARY KEY,
    trainjob_uid TEXT NOT NULL
) WITHOUT ROWID;
-- rowid is the capture order: a pod captured again is re-inserted, last.
CREATE TABLE captured (
    trainjob_uid TEXT NOT NULL,
    pod_uid TEXT NOT NULL,
    namespace TEXT NOT NULL,
    across_gap INTEGER NOT NULL,
    pod_json TEXT NOT NULL,
    UNIQUE (trainjob_uid, pod_uid)
);
CREATE TABLE history (
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    uid TEXT NOT NULL,
    gone_since INTEGER,
    -- [[unix seconds, state, cause kind, held]..], oldest first
    changes TEXT NOT NULL,
    -- the last preemptor (classify_wasm::queue::Preemptor as JSON), if any
    preempted_by TEXT,
    PRIMARY KEY (kind, namespace, name, uid)
) WITHOUT ROWID;
";

/// What brings a file of each older schema version to the next one, in
/// order: `MIGRATIONS[0]` takes version 1 to 2.
const MIGRATIONS: &[&str] = &[
    // 2: a history keeps the last preemptor.
    "ALTER TABLE history ADD COLUMN preempted_by TEXT;",
];

/// What can go wrong with the state directory.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The directory could not be created or read.
    #[error("the state directory {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Another process holds the database.
    #[error(
        "the state database {path} is locked by another process \
         (is another dispatch-dash serving from this state directory?)"
    )]
    Locked {
        /// The database file.
        path: PathBuf,
    },
    /// The file is not a database, or a damaged one.
    #[error(
        "the state database {path} is corrupt ({detail}); nothing was changed: \
         move it away to start with no saved state"
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
    },
    /// The file was written by a newer dispatch-dash.
    #[error(
        "the state database {path} has schema version {found}, newer than the {known} \
         this dispatch-dash knows; run a newer version or use another --state-dir"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// This binary's.
        known: i64,
    },
    /// Any other SQLite failure (a full disk, an IO error).
    #[error("the state database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
}

/// One change to mirror, in the order the store made it.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// A Pod or TrainJob was added or changed (other kinds are ignored).
    PutObject(Arc<StoredObject>),
    /// A Pod or TrainJob is gone.
    DeleteObject {
        /// Its kind.
        kind: ObjectKind,
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A pod is remembered to belong to a TrainJob.
    PutOwner {
        /// The pod's UID.
        pod_uid: String,
        /// The TrainJob's UID.
        trainjob_uid: String,
    },
    /// A pod's owner is forgotten (the pod is gone).
    DeleteOwner {
        /// The pod's UID.
        pod_uid: String,
    },
    /// A pod was captured (last in capture order).
    PutCaptured(Arc<CapturedPod>),
    /// A captured pod was dropped.
    DeleteCaptured {
        /// Its TrainJob's UID.
        trainjob_uid: String,
        /// The pod's UID.
        pod_uid: String,
    },
    /// An object's history is now this.
    PutHistory(HistoryKey, ObjectHistory),
    /// An object's history was dropped.
    DeleteHistory(HistoryKey),
}

/// Everything the database held at start, in the store's terms.
#[derive(Debug, Default)]
pub struct Restored {
    /// The last seen Pods and TrainJobs.
    pub objects: Vec<StoredObject>,
    /// `(pod UID, TrainJob UID)`.
    pub owners: Vec<(String, String)>,
    /// Captured pods, oldest first.
    pub captured: Vec<CapturedPod>,
    /// Histories.
    pub history: Vec<(HistoryKey, ObjectHistory)>,
    /// Rows that could not be read back (a projection that no longer
    /// parses); they are left in the file and counted here.
    pub unreadable: usize,
}

/// The open state database. See the module docs.
#[derive(Debug)]
pub struct StateDir {
    conn: Connection,
    path: PathBuf,
}

/// Whether an object of `kind` is kept in the database.
pub fn kept(kind: ObjectKind) -> bool {
    matches!(kind, ObjectKind::Pod | ObjectKind::TrainJob)
}

impl StateDir {
    /// Opens (creating if needed) `dir/state.db`, checks it and takes its
    /// lock.
    pub fn open(dir: &Path) -> Result<StateDir, Error> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Dir {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join(FILE_NAME);
        let sqlite = |source| classify_error(&path, source);
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sqlite)?;
        // rusqlite waits 5 s on a busy file by default: a second server
        // must fail at once instead.
        conn.busy_timeout(std::time::Duration::ZERO)
            .map_err(sqlite)?;
        // Exclusive before WAL: no shared-memory index, and the lock is
        // held from the first write to the end of the process.
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
            .map_err(sqlite)?;
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .map_err(sqlite)?;
        if version > SCHEMA_VERSION {
            return Err(Error::NewerSchema {
                path,
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        let check: String = conn
            .pragma_query_value(None, "quick_check", |row| row.get(0))
            .map_err(sqlite)?;
        if check != "ok" {
            return Err(Error::Corrupt {
                path,
                detail: check,
            });
        }
        let journal: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(sqlite)?;
        if !journal.eq_ignore_ascii_case("wal") {
            return Err(Error::Corrupt {
                path,
                detail: format!("journal mode {journal} instead of wal"),
            });
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(sqlite)?;
        // The log is reset at each checkpoint (every 1000 pages) but keeps
        // its largest size unless told: truncate it back to this.
        conn.pragma_update(None, "journal_size_limit", WAL_BYTES_KEPT)
            .map_err(sqlite)?;
        if version == 0 {
            let tables: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_master", [], |row| row.get(0))
                .map_err(sqlite)?;
            if tables > 0 {
                return Err(Error::Corrupt {
                    path,
                    detail: "a database with tables but no dispatch-dash schema version".into(),
                });
            }
            conn.execute_batch(&format!(
                "BEGIN IMMEDIATE; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))
            .map_err(sqlite)?;
        } else if version < SCHEMA_VERSION {
            // Older files are brought up to date in one transaction, which
            // also takes the exclusive lock.
            let steps: String = MIGRATIONS
                .iter()
                .skip(usize::try_from(version - 1).unwrap_or(0))
                .copied()
                .collect();
            conn.execute_batch(&format!(
                "BEGIN IMMEDIATE; {steps} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            ))
            .map_err(sqlite)?;
        } else {
            // A write takes the exclusive lock now rather than at the
            // first batch, so a second server fails at start.
            conn.execute_batch("BEGIN IMMEDIATE; COMMIT;")
                .map_err(sqlite)?;
        }
        Ok(StateDir { conn, path })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads everything back (start-up, before the first list).
    pub fn load(&self) -> Result<Restored, Error> {
        let sqlite = |source| classify_error(&self.path, source);
        let mut restored = Restored::default();
        let mut statement = self
            .conn
            .prepare("SELECT kind, json FROM objects")
            .map_err(sqlite)?;
        let rows = statement
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(sqlite)?;
        for row in rows {
            let (kind, json) = row.map_err(sqlite)?;
            match reproject(&kind, &json) {
                Some(object) => restored.objects.push(object),
                None => restored.unreadable += 1,
            }
        }
        let mut statement = self
            .conn
            .prepare("SELECT pod_uid, trainjob_uid FROM pod_owners")
            .map_err(sqlite)?;
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
            .map_err(sqlite)?;
        for row in rows {
            restored.owners.push(row.map_err(sqlite)?);
        }
        let mut statement = self
            .conn
            .prepare(
                "SELECT trainjob_uid, namespace, across_gap, pod_json FROM captured ORDER BY rowid",
            )
            .map_err(sqlite)?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, bool>(2)?,
                    row.get::<_, String>(3)?,
                ))
            })
            .map_err(sqlite)?;
        for row in rows {
            let (trainjob_uid, namespace, across_gap, json) = row.map_err(sqlite)?;
            match reproject(ObjectKind::Pod.name(), &json) {
                Some(pod) => restored.captured.push(CapturedPod {
                    trainjob_uid,
                    namespace,
                    pod: Arc::new(pod),
                    across_gap,
                }),
                None => restored.unreadable += 1,
            }
        }
        let mut statement = self
            .conn
            .prepare(
                "SELECT kind, namespace, name, uid, gone_since, changes, preempted_by FROM history",
            )
            .map_err(sqlite)?;
        let rows = statement
            .query_map([], |row| {
                Ok((
                    HistoryKey {
                        kind: row.get(0)?,
                        namespace: row.get(1)?,
                        name: row.get(2)?,
                        uid: row.get(3)?,
                    },
                    row.get::<_, Option<i64>>(4)?,
                    row.get::<_, String>(5)?,
                    row.get::<_, Option<String>>(6)?,
                ))
            })
            .map_err(sqlite)?;
        for row in rows {
            let (key, gone_since, changes, preempted_by) = row.map_err(sqlite)?;
            // An unreadable preemptor costs only itself, not the history.
            let preempted_by = preempted_by.and_then(|text| serde_json::from_str(&text).ok());
            match decode_changes(&changes) {
                Some(changes) => restored.history.push((
                    key,
                    ObjectHistory {
                        changes,
                        gone_since,
                        preempted_by,
                    },
                )),
                None => restored.unreadable += 1,
            }
        }
        Ok(restored)
    }

    /// Applies one batch of changes in one transaction.
    pub fn write(&mut self, ops: &[Op]) -> Result<(), Error> {
        if ops.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let sqlite = |source| classify_error(&path, source);
        let tx = self.conn.transaction().map_err(sqlite)?;
        {
            // Each statement is prepared at its first use in the batch: a
            // batch of pod changes, the common one, prepares one, not eight.
            let mut statements: [Option<Statement<'_>>; Write::COUNT] = Default::default();
            for op in ops {
                let mut run = |which: Write, values: &[&dyn ToSql]| {
                    prepared(&mut statements, &tx, which)
                        .and_then(|statement| statement.execute(values))
                };
                match op {
                    Op::PutObject(object) if kept(object.kind) => run(
                        Write::PutObject,
                        params![
                            object.kind.name(),
                            object.namespace,
                            object.name,
                            &*object.json
                        ],
                    ),
                    Op::PutObject(_) => Ok(0),
                    Op::DeleteObject {
                        kind,
                        namespace,
                        name,
                    } => run(Write::DeleteObject, params![kind.name(), namespace, name]),
                    Op::PutOwner {
                        pod_uid,
                        trainjob_uid,
                    } => run(Write::PutOwner, params![pod_uid, trainjob_uid]),
                    Op::DeleteOwner { pod_uid } => run(Write::DeleteOwner, params![pod_uid]),
                    Op::PutCaptured(captured) => run(
                        Write::PutCaptured,
                        params![
                            captured.trainjob_uid,
                            captured.pod.uid,
                            captured.namespace,
                            captured.across_gap,
                            &*captured.pod.json
                        ],
                    ),
                    Op::DeleteCaptured {
                        trainjob_uid,
                        pod_uid,
                    } => run(Write::DeleteCaptured, params![trainjob_uid, pod_uid]),
                    Op::PutHistory(key, history) => run(
                        Write::PutHistory,
                        params![
                            key.kind,
                            key.namespace,
                            key.name,
                            key.uid,
                            history.gone_since,
                            encode_changes(history),
                            history
                                .preempted_by
                                .as_ref()
                                .and_then(|p| serde_json::to_string(p).ok())
                        ],
                    ),
                    Op::DeleteHistory(key) => run(
                        Write::DeleteHistory,
                        params![key.kind, key.namespace, key.name, key.uid],
                    ),
                }
                .map_err(sqlite)?;
            }
        }
        tx.commit().map_err(sqlite)
    }

    /// Bytes of the database file and its write-ahead log (the load
    /// benchmark reports them per captured pod).
    pub fn file_bytes(dir: &Path) -> u64 {
        [FILE_NAME.to_string(), format!("{FILE_NAME}-wal")]
            .iter()
            .filter_map(|name| std::fs::metadata(dir.join(name)).ok())
            .map(|m| m.len())
            .sum()
    }
}

/// The statements [`StateDir::write`] runs.
#[derive(Debug, Clone, Copy)]
enum Write {
    PutObject,
    DeleteObject,
    PutOwner,
    DeleteOwner,
    PutCaptured,
    DeleteCaptured,
    PutHistory,
    DeleteHistory,
}

impl Write {
    /// One slot per variant: the last one's index is `COUNT - 1`.
    const COUNT: usize = Write::DeleteHistory as usize + 1;

    fn sql(self) -> &'static str {
        match self {
            Write::PutObject => {
                "INSERT INTO objects (kind, namespace, name, json) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (kind, namespace, name) DO UPDATE SET json = excluded.json"
            }
            Write::DeleteObject => {
                "DELETE FROM objects WHERE kind = ?1 AND namespace = ?2 AND name = ?3"
            }
            Write::PutOwner => {
                "INSERT OR REPLACE INTO pod_owners (pod_uid, trainjob_uid) VALUES (?1, ?2)"
            }
            Write::DeleteOwner => "DELETE FROM pod_owners WHERE pod_uid = ?1",
            Write::PutCaptured => {
                "INSERT OR REPLACE INTO captured
                     (trainjob_uid, pod_uid, namespace, across_gap, pod_json)
                     VALUES (?1, ?2, ?3, ?4, ?5)"
            }
            Write::DeleteCaptured => {
                "DELETE FROM captured WHERE trainjob_uid = ?1 AND pod_uid = ?2"
            }
            Write::PutHistory => {
                "INSERT OR REPLACE INTO history
                     (kind, namespace, name, uid, gone_since, changes, preempted_by)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            }
            Write::DeleteHistory => {
                "DELETE FROM history
                     WHERE kind = ?1 AND namespace = ?2 AND name = ?3 AND uid = ?4"
            }
        }
    }
}

/// The statement `which`, prepared in `tx` at its first use.
fn prepared<'s, 'c>(
    statements: &'s mut [Option<Statement<'c>>; Write::COUNT],
    tx: &'c Transaction<'_>,
    which: Write,
) -> rusqlite::Result<&'s mut Statement<'c>> {
    // `Write::COUNT` is the number of variants, so every `which` has a slot;
    // a missing one would be a bug of this module, reported as SQLite's
    // misuse error rather than a panic.
    let slot = statements
        .get_mut(which as usize)
        .ok_or(rusqlite::Error::InvalidQuery)?;
    let statement = match slot.take() {
        Some(statement) => statement,
        None => tx.prepare(which.sql())?,
    };
    Ok(slot.insert(statement))
}

/// A stored projection read back as the store holds it: the projection of
/// a projection is itself, so the indexed fields come back as they were.
fn reproject(kind: &str, json: &str) -> Option<StoredObject> {
    let kind = ObjectKind::parse(kind)?;
    // Parsed once, straight into what the projection reads, as a watch
    // parses what it receives.
    let object: ApiObject = serde_json::from_str(json).ok()?;
    let api_version = object
        .api_version()
        .unwrap_or(kind.api_version())
        .to_string();
    match object.project(kind, &api_version) {
        Projected::Stored(stored) => Some(stored),
        Projected::NotStored(_) => None,
    }
}

fn encode_changes(history: &ObjectHistory) -> String {
    let rows: Vec<Value> = history
        .changes
        .iter()
        .map(|c| serde_json::json!([c.at_unix, c.state.as_str(), c.cause.as_str(), c.held]))
        .collect();
    Value::Array(rows).to_string()
}

fn decode_changes(text: &str) -> Option<std::collections::VecDeque<Change>> {
    let rows: Vec<(i64, String, String, bool)> = serde_json::from_str(text).ok()?;
    rows.into_iter()
        .map(|(at_unix, state, cause, held)| {
            Some(Change {
                at_unix,
                state: classify_wasm::State::ALL
                    .into_iter()
                    .find(|s| s.as_str() == state)?,
                cause: classify_wasm::CauseKind::ALL
                    .into_iter()
                    .find(|k| k.as_str() == cause)?,
                held,
            })
        })
        .collect()
}

/// Names a lock or a damaged file as such; anything else as it is.
fn classify_error(path: &Path, source: rusqlite::Error) -> Error {
    let path = path.to_path_buf();
    match source.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Error::Locked { path },
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => Error::Corrupt {
            path,
            detail: source.to_string(),
        },
        _ => Error::Sqlite { path, source },
    }
}

#[cfg(test)]
#[path = "persist_tests.rs"]
mod tests;

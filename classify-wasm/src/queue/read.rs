//! Kueue's objects as the queue facts read them: LocalQueue, ClusterQueue
//! (v1beta2 and v1beta1 alike) and a Workload's pod sets, with the
//! arithmetic of what fits.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::{add, sub, Room, Wait};
use crate::model::words;
use crate::quantity::Quantity;

/// A field of a queue object that is not what Kueue writes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueReadError {
    /// `ClusterQueue gpu-cq`, `Workload team-a/w`.
    pub object: String,
    /// The field's path: `spec.resourceGroups[0].flavors[1].resources[0].nominalQuota`.
    pub field: String,
    /// What was wrong, with the column for a malformed quantity.
    pub message: String,
}

impl fmt::Display for QueueReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.object, self.field, self.message)
    }
}

impl std::error::Error for QueueReadError {}

pub(super) fn at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    let mut node = v;
    for key in path {
        node = node.get(*key)?;
    }
    Some(node).filter(|n| !n.is_null())
}

/// A non-empty string (section 1: empty is absent).
pub(super) fn text<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    at(v, path)?.as_str().filter(|s| !s.is_empty())
}

pub(super) fn label<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    at(v, &["metadata", "labels"])?
        .get(key)?
        .as_str()
        .filter(|s| !s.is_empty())
}

pub(super) fn list<'v>(v: &'v Value, path: &[&str]) -> &'v [Value] {
    at(v, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn entries(v: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    v.and_then(Value::as_object).into_iter().flatten()
}

pub(super) fn condition<'v>(v: &'v Value, kind: &str) -> Option<&'v Value> {
    list(v, &["status", "conditions"])
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

pub(super) fn is_true(condition: Option<&Value>) -> bool {
    condition.and_then(|c| text(c, &["status"])) == Some("True")
}

fn condition_words(c: &Value) -> String {
    words(text(c, &["reason"]), text(c, &["message"]))
}

/// A count Kueue writes as an integer (a YAML dump may make it a string).
/// The words of a Workload's `status.requeueState`: how many times Kueue
/// requeued it after an eviction (a PodsReady timeout, say) and when its
/// backoff ends, before which it is not admitted again. The engine reads
/// no clock, so the time is given as written.
pub(super) fn requeued(w: &Value) -> Option<String> {
    let count = at(w, &["status", "requeueState", "count"])
        .and_then(integer)
        .filter(|n| *n > 0);
    let until = text(w, &["status", "requeueState", "requeueAt"]);
    let times = |n: i64| match n {
        1 => "once".to_string(),
        2 => "twice".to_string(),
        n => format!("{n} times"),
    };
    match (count, until) {
        (None, None) => None,
        (Some(n), None) => Some(format!("requeued {} after eviction", times(n))),
        (Some(n), Some(until)) => Some(format!(
            "requeued {} after eviction; backoff until {until}",
            times(n)
        )),
        (None, Some(until)) => Some(format!("requeue backoff until {until}")),
    }
}

pub(super) fn integer(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

pub(super) fn quantity(v: &Value, object: &str, field: &str) -> Result<Quantity, QueueReadError> {
    let error = |message: String| QueueReadError {
        object: object.to_string(),
        field: field.to_string(),
        message,
    };
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(error(format!(
                "must be a quantity, found {}",
                type_name(other)
            )))
        }
    };
    Quantity::parse(&text).map_err(|e| error(format!("{text:?} is not a quantity: {e}")))
}

/// A quantity as a person reads it: bytes with the largest binary suffix
/// that divides them (`64Gi`), anything else in its canonical text.
pub(super) fn amount(resource: &str, q: Quantity) -> String {
    let bytes =
        resource == "memory" || resource.ends_with("storage") || resource.starts_with("hugepages-");
    let milli = q.milli();
    if bytes && milli != 0 && milli % 1000 == 0 {
        let units = milli / 1000;
        for (suffix, shift) in [
            ("Ei", 60),
            ("Pi", 50),
            ("Ti", 40),
            ("Gi", 30),
            ("Mi", 20),
            ("Ki", 10),
        ] {
            let unit = 1i128 << shift;
            if units % unit == 0 {
                return format!("{}{suffix}", units / unit);
            }
        }
    }
    q.to_string()
}

fn name_of(v: &Value) -> String {
    match (
        text(v, &["metadata", "namespace"]),
        text(v, &["metadata", "name"]),
    ) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (None, Some(name)) => name.to_string(),
        _ => String::new(),
    }
}

pub(super) struct LocalQueue<'v> {
    pub cluster_queue: Option<&'v str>,
    /// `spec.stopPolicy` when it is not `None`.
    pub stop_policy: Option<&'v str>,
    /// The words of an `Active` condition that is not `True`.
    pub inactive: Option<String>,
    pending: Option<i64>,
    admitted: Option<i64>,
}

impl<'v> LocalQueue<'v> {
    pub fn read(v: &'v Value) -> LocalQueue<'v> {
        LocalQueue {
            cluster_queue: text(v, &["spec", "clusterQueue"]),
            stop_policy: text(v, &["spec", "stopPolicy"]).filter(|p| *p != "None"),
            inactive: condition(v, "Active")
                .filter(|c| text(c, &["status"]) != Some("True"))
                .map(|c| Some(condition_words(c)).filter(|w| !w.is_empty()))
                .map(|w| w.unwrap_or_else(|| "Active is not True".to_string())),
            pending: at(v, &["status", "pendingWorkloads"]).and_then(integer),
            admitted: at(v, &["status", "admittedWorkloads"]).and_then(integer),
        }
    }

    /// What its own status says, for a user who may not read the
    /// ClusterQueue.
    pub fn counts(&self) -> String {
        match (self.pending, self.admitted) {
            (None, None) => "has no status yet".to_string(),
            (pending, admitted) => format!(
                "has {} pending and {} admitted workloads",
                pending.unwrap_or(0),
                admitted.unwrap_or(0)
            ),
        }
    }
}

struct Quota<'v> {
    resource: &'v str,
    nominal: Quantity,
    borrowing_limit: Option<Quantity>,
}

struct Flavor<'v> {
    name: &'v str,
    quotas: Vec<Quota<'v>>,
}

struct Group<'v> {
    covered: Vec<&'v str>,
    flavors: Vec<Flavor<'v>>,
}

impl Group<'_> {
    fn covers(&self, resource: &str) -> bool {
        self.covered.contains(&resource)
            || self
                .flavors
                .iter()
                .any(|f| f.quotas.iter().any(|q| q.resource == resource))
    }
}

pub(super) struct ClusterQueue<'v> {
    name: &'v str,
    cohort: Option<&'v str>,
    stop_policy: Option<&'v str>,
    inactive: Option<String>,
    groups: Vec<Group<'v>>,
    reserved: BTreeMap<(&'v str, &'v str), Quantity>,
}

impl<'v> ClusterQueue<'v> {
    pub fn read(name: &'v str, v: &'v Value) -> Result<ClusterQueue<'v>, QueueReadError> {
        let object = format!("ClusterQueue {name}");
        let mut groups = Vec::new();
        for (gi, g) in list(v, &["spec", "resourceGroups"]).iter().enumerate() {
            let mut flavors = Vec::new();
            for (fi, f) in list(g, &["flavors"]).iter().enumerate() {
                let mut quotas = Vec::new();
                for (ri, r) in list(f, &["resources"]).iter().enumerate() {
                    let path = format!("spec.resourceGroups[{gi}].flavors[{fi}].resources[{ri}]");
                    let nominal = match at(r, &["nominalQuota"]) {
                        Some(q) => quantity(q, &object, &format!("{path}.nominalQuota"))?,
                        None => Quantity::ZERO,
                    };
                    let borrowing_limit = match at(r, &["borrowingLimit"]) {
                        Some(q) => Some(quantity(q, &object, &format!("{path}.borrowingLimit"))?),
                        None => None,
                    };
                    quotas.push(Quota {
                        resource: text(r, &["name"]).unwrap_or(""),
                        nominal,
                        borrowing_limit,
                    });
                }
                flavors.push(Flavor {
                    name: text(f, &["name"]).unwrap_or(""),
                    quotas,
                });
            }
            groups.push(Group {
                covered: list(g, &["coveredResources"])
                    .iter()
                    .filter_map(Value::as_str)
                    .collect(),
                flavors,
            });
        }
        // Kueue before v0.5 wrote only the usage; it is the reservation
        // when admission checks are not in use.
        let source = if at(v, &["status", "flavorsReservation"]).is_some() {
            "flavorsReservation"
        } else {
            "flavorsUsage"
        };
        let mut reserved = BTreeMap::new();
        for (fi, f) in list(v, &["status", source]).iter().enumerate() {
            let flavor = text(f, &["name"]).unwrap_or("");
            for (ri, r) in list(f, &["resources"]).iter().enumerate() {
                if let Some(total) = at(r, &["total"]) {
                    let field = format!("status.{source}[{fi}].resources[{ri}].total");
                    let total = quantity(total, &object, &field)?;
                    reserved.insert((flavor, text(r, &["name"]).unwrap_or("")), total);
                }
            }
        }
        Ok(ClusterQueue {
            name,
            cohort: text(v, &["spec", "cohortName"]).or_else(|| text(v, &["spec", "cohort"])),
            stop_policy: text(v, &["spec", "stopPolicy"]).filter(|p| *p != "None"),
            inactive: condition(v, "Active")
                .filter(|c| text(c, &["status"]) != Some("True"))
                .map(condition_words),
            groups,
            reserved,
        })
    }

    /// Its cohort, under either version's name.
    pub fn cohort(&self) -> Option<&'v str> {
        self.cohort
    }

    /// Each flavor's quota of each resource, in the ClusterQueue's order
    /// (groups, then flavors, then resources): flavor, resource, nominal
    /// quota and borrowing limit.
    pub fn quotas(&self) -> Vec<(&'v str, &'v str, Quantity, Option<Quantity>)> {
        self.groups
            .iter()
            .flat_map(|g| &g.flavors)
            .flat_map(|f| {
                f.quotas
                    .iter()
                    .map(move |q| (f.name, q.resource, q.nominal, q.borrowing_limit))
            })
            .collect()
    }

    /// Why it admits nothing, if it is stopped or inactive.
    pub fn stopped(&self) -> Option<String> {
        let name = self.name;
        if let Some(policy) = self.stop_policy {
            return Some(format!(
                "ClusterQueue {name} is stopped (stopPolicy {policy})"
            ));
        }
        self.inactive.as_ref().map(|words| {
            if words.is_empty() {
                format!("ClusterQueue {name} is inactive")
            } else {
                format!("ClusterQueue {name} is inactive: {words}")
            }
        })
    }

    /// What the asks meet in this ClusterQueue, group by group (a pod
    /// set's resources of one group must fit in one flavor, tried in the
    /// group's order, as Kueue assigns them).
    pub fn verdict(&self, asks: &BTreeMap<String, Quantity>) -> Verdict {
        let asked = |r: &str| asks.get(r).copied().filter(|q| *q > Quantity::ZERO);
        let mut rows = Vec::new();
        let mut parts: Vec<(Outcome, String)> = Vec::new();
        for group in &self.groups {
            // The group's resources in its own order, then any its flavors
            // name that `coveredResources` leaves out.
            let mut resources: Vec<&str> = group.covered.clone();
            for flavor in &group.flavors {
                for quota in &flavor.quotas {
                    if !resources.contains(&quota.resource) {
                        resources.push(quota.resource);
                    }
                }
            }
            let asked_here: Vec<(&str, Quantity)> = resources
                .iter()
                .filter_map(|r| asked(r).map(|q| (*r, q)))
                .collect();
            if asked_here.is_empty() {
                continue;
            }
            let group_rows: Vec<Row> = group
                .flavors
                .iter()
                .flat_map(|flavor| {
                    asked_here
                        .iter()
                        .map(move |(resource, ask)| self.row(flavor, resource, *ask))
                })
                .collect();
            parts.push(self.group_part(&asked_here, &group_rows));
            rows.extend(group_rows);
        }
        for (resource, ask) in asks {
            if *ask > Quantity::ZERO && !self.groups.iter().any(|g| g.covers(resource)) {
                parts.push((
                    Outcome::NeverFits,
                    format!(
                        "needs {} {resource}; ClusterQueue {} has no quota for {resource}",
                        amount(resource, *ask),
                        self.name
                    ),
                ));
            }
        }
        let worst = parts.iter().map(|(o, _)| *o).max().unwrap_or(Outcome::Fits);
        let said: Vec<&str> = parts
            .iter()
            .filter(|(o, _)| *o == worst)
            .map(|(_, s)| s.as_str())
            .collect();
        let (wait, sentence) = match worst {
            Outcome::NeverFits => (Wait::NeverFits, format!("never fits: {}", said.join("; "))),
            Outcome::Blocked => (Wait::Quota, said.join("; and ")),
            Outcome::CouldBorrow => (Wait::CouldBorrow, said.join("; and ")),
            Outcome::Fits if parts.is_empty() => {
                (Wait::Fits, "fits: asks for no quota".to_string())
            }
            Outcome::Fits => (Wait::Fits, format!("fits: {}", said.join("; "))),
        };
        Verdict {
            wait,
            rows,
            sentence,
        }
    }

    fn row(&self, flavor: &Flavor<'_>, resource: &str, ask: Quantity) -> Row {
        let quota = flavor.quotas.iter().find(|q| q.resource == resource);
        let nominal = quota.map_or(Quantity::ZERO, |q| q.nominal);
        let reserved = self
            .reserved
            .get(&(flavor.name, resource))
            .copied()
            .unwrap_or(Quantity::ZERO);
        let borrowing = self
            .cohort
            .map(|cohort| (cohort.to_string(), quota.and_then(|q| q.borrowing_limit)));
        Row {
            flavor: flavor.name.to_string(),
            resource: resource.to_string(),
            ask,
            nominal,
            reserved,
            borrowing,
        }
    }

    /// A group's outcome and what it says: the first flavor where every
    /// ask fits, else the first where borrowing could make them fit, else
    /// never (no flavor could ever hold them), else blocked.
    fn group_part(&self, asked: &[(&str, Quantity)], rows: &[Row]) -> (Outcome, String) {
        let per_flavor: Vec<&[Row]> = rows.chunks(asked.len().max(1)).collect();
        let name = self.name;
        if let Some(flavor) = per_flavor.iter().find(|f| f.iter().all(Row::fits)) {
            let all: Vec<&Row> = flavor.iter().collect();
            let named = all.len() > 1;
            let clauses: Vec<String> = all.iter().map(|r| r.clause(named)).collect();
            return (
                Outcome::Fits,
                format!(
                    "needs {}; ClusterQueue {name} has {}",
                    needs_of(asked, &all),
                    clauses.join(", ")
                ),
            );
        }
        if let Some(flavor) = per_flavor
            .iter()
            .find(|f| f.iter().all(Row::fits_borrowing))
        {
            return (Outcome::CouldBorrow, self.borrowing_sentence(asked, flavor));
        }
        if per_flavor.iter().all(|f| f.iter().any(|r| !r.ever_fits())) {
            return (Outcome::NeverFits, self.never_fits_sentence(asked, rows));
        }
        (
            Outcome::Blocked,
            self.blocked_sentence(asked, rows, &per_flavor),
        )
    }

    /// A group that fits in `flavor` if it borrows from the cohort.
    fn borrowing_sentence(&self, asked: &[(&str, Quantity)], flavor: &[Row]) -> String {
        let short: Vec<&Row> = flavor.iter().filter(|r| !r.fits()).collect();
        let named = short.len() > 1;
        let clauses: Vec<String> = short.iter().map(|r| r.clause(named)).collect();
        let borrow: Vec<String> = short.iter().map(|r| r.short_text(named)).collect();
        let (cohort, limit) = short
            .first()
            .and_then(|r| r.borrowing.clone())
            .unwrap_or_default();
        let limit = match limit {
            Some(_) => {
                let limits: Vec<String> = short.iter().map(|r| r.limit_text(named)).collect();
                format!("borrowing limit {}", limits.join(", "))
            }
            None => "no borrowing limit".to_string(),
        };
        format!(
            "needs {}; ClusterQueue {} has {}; {} more may be borrowed from cohort \
             {cohort} ({limit}) when the cohort has it unused",
            needs_of(asked, &short),
            self.name,
            clauses.join(", "),
            borrow.join(" and ")
        )
    }

    /// A group that no flavor could ever hold, whatever is released.
    fn never_fits_sentence(&self, asked: &[(&str, Quantity)], rows: &[Row]) -> String {
        let name = self.name;
        let over: Vec<&Row> = rows.iter().filter(|r| !r.ever_fits()).collect();
        if over.is_empty() {
            let needs: Vec<String> = asked
                .iter()
                .map(|(r, q)| format!("{} {r}", amount(r, *q)))
                .collect();
            return format!(
                "needs {}; ClusterQueue {name} has no flavor for it",
                needs.join(" and ")
            );
        }
        let named = more_than_one_resource(&over);
        let caps: Vec<String> = over.iter().map(|r| r.cap_text(named)).collect();
        format!(
            "needs {}; ClusterQueue {name} can give at most {}",
            needs_of(asked, &over),
            caps.join(", ")
        )
    }

    /// A group that waits for quota to be released.
    fn blocked_sentence(
        &self,
        asked: &[(&str, Quantity)],
        rows: &[Row],
        per_flavor: &[&[Row]],
    ) -> String {
        let short: Vec<&Row> = rows.iter().filter(|r| !r.fits()).collect();
        let named = more_than_one_resource(&short);
        let clauses: Vec<String> = short.iter().map(|r| r.clause(named)).collect();
        let release = if let [only] = short.as_slice() {
            match only.short_borrowing() {
                // In a cohort with a borrowing limit, releasing less lets it
                // borrow the rest, when the cohort has that unused.
                Some((cohort, less)) => format!(
                    "{} more must be released, or {} if it borrows to its limit from cohort {cohort}",
                    amount(&only.resource, only.short()),
                    amount(&only.resource, less)
                ),
                None => format!(
                    "{} more must be released",
                    amount(&only.resource, only.short())
                ),
            }
        } else {
            let per_flavor: Vec<String> = per_flavor
                .iter()
                .map(|f| {
                    let needed: Vec<String> = f
                        .iter()
                        .filter(|r| !r.fits())
                        .map(|r| r.short_text(true))
                        .collect();
                    let flavor = f.first().map_or("", |r| r.flavor.as_str());
                    format!("{} in flavor {flavor}", needed.join(" and "))
                })
                .collect();
            format!("to run, release {}", per_flavor.join(", or "))
        };
        format!(
            "needs {}; ClusterQueue {} has {}; {release}",
            needs_of(asked, &short),
            self.name,
            clauses.join(", ")
        )
    }
}

/// What the job asks of the resources of `rows`, in their order, once each:
/// `32 nvidia.com/gpu and 256 cpu`.
fn needs_of(asked: &[(&str, Quantity)], rows: &[&Row]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for row in rows {
        if !seen.contains(&row.resource.as_str()) {
            seen.push(&row.resource);
        }
    }
    let needs: Vec<String> = seen
        .iter()
        .filter_map(|r| asked.iter().find(|(a, _)| a == r))
        .map(|(r, q)| format!("{} {r}", amount(r, *q)))
        .collect();
    needs.join(" and ")
}

/// Whether `rows` speak of more than one resource, so that each clause must
/// name its own.
fn more_than_one_resource(rows: &[&Row]) -> bool {
    let first = rows.first().map(|r| r.resource.as_str());
    rows.iter().any(|r| Some(r.resource.as_str()) != first)
}

/// Ordered from best to worst: the worst group speaks for the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Fits,
    CouldBorrow,
    Blocked,
    NeverFits,
}

pub(super) struct Verdict {
    pub wait: Wait,
    pub rows: Vec<Row>,
    pub sentence: String,
}

/// One flavor and resource against one ask.
pub(super) struct Row {
    flavor: String,
    resource: String,
    ask: Quantity,
    nominal: Quantity,
    reserved: Quantity,
    /// With a cohort: its name and the borrowing limit (none: unlimited).
    borrowing: Option<(String, Option<Quantity>)>,
}

impl Row {
    /// `nominal − reserved`, which is negative while borrowing.
    fn unreserved(&self) -> Quantity {
        sub(self.nominal, self.reserved)
    }

    fn free(&self) -> Quantity {
        self.unreserved().max(Quantity::ZERO)
    }

    fn fits(&self) -> bool {
        self.ask <= self.unreserved()
    }

    /// What must be released for the ask to fit.
    fn short(&self) -> Quantity {
        sub(self.ask, self.unreserved())
    }

    /// With a cohort and a borrowing limit: the cohort, and what must be
    /// released for the ask to fit by borrowing up to the limit.
    fn short_borrowing(&self) -> Option<(&str, Quantity)> {
        match &self.borrowing {
            Some((cohort, Some(limit))) => Some((
                cohort.as_str(),
                sub(self.ask, add(self.unreserved(), *limit)),
            )),
            _ => None,
        }
    }

    fn fits_borrowing(&self) -> bool {
        match &self.borrowing {
            None => self.fits(),
            Some((_, None)) => true,
            Some((_, Some(limit))) => self.ask <= add(self.unreserved(), *limit),
        }
    }

    /// What this flavor could ever give: nominal, plus the borrowing limit
    /// with a cohort; `None` when a cohort sets no limit.
    fn cap(&self) -> Option<Quantity> {
        match &self.borrowing {
            None => Some(self.nominal),
            Some((_, None)) => None,
            Some((_, Some(limit))) => Some(add(self.nominal, *limit)),
        }
    }

    fn ever_fits(&self) -> bool {
        self.cap().is_none_or(|cap| self.ask <= cap)
    }

    fn of(&self, q: Quantity) -> String {
        amount(&self.resource, q)
    }

    fn clause(&self, named: bool) -> String {
        let resource = if named {
            format!(" {}", self.resource)
        } else {
            String::new()
        };
        format!(
            "{} of {}{resource} free in flavor {} ({} reserved)",
            self.of(self.free()),
            self.of(self.nominal),
            self.flavor,
            self.of(self.reserved)
        )
    }

    fn short_text(&self, named: bool) -> String {
        if named {
            format!("{} {}", self.of(self.short()), self.resource)
        } else {
            self.of(self.short())
        }
    }

    fn limit_text(&self, named: bool) -> String {
        let limit = match &self.borrowing {
            Some((_, Some(limit))) => self.of(*limit),
            _ => "unlimited".to_string(),
        };
        if named {
            format!("{limit} {}", self.resource)
        } else {
            limit
        }
    }

    fn cap_text(&self, named: bool) -> String {
        let cap = self.cap().map_or("unlimited".to_string(), |c| self.of(c));
        if named {
            format!("{cap} {} in flavor {}", self.resource, self.flavor)
        } else {
            format!("{cap} in flavor {}", self.flavor)
        }
    }

    pub fn room(&self) -> Room {
        Room {
            flavor: self.flavor.clone(),
            resource: self.resource.clone(),
            ask: self.of(self.ask),
            nominal: self.of(self.nominal),
            reserved: self.of(self.reserved),
            free: self.of(self.free()),
            borrowing_limit: self
                .borrowing
                .as_ref()
                .map(|(_, limit)| limit.map_or("unlimited".to_string(), |l| self.of(l))),
            fits: self.fits(),
        }
    }
}

/// A Workload that has reached a state where quota no longer matters, and
/// what to say: `None` while it waits for quota.
pub(super) fn settled(w: &Value) -> Option<(Wait, String)> {
    let cq = text(w, &["status", "admission", "clusterQueue"]);
    let in_cq = cq.map_or(String::new(), |cq| format!(" in ClusterQueue {cq}"));
    if is_true(condition(w, "Finished")) {
        return Some((Wait::Finished, "finished".to_string()));
    }
    if is_true(condition(w, "Admitted")) {
        return Some((Wait::Admitted, format!("admitted{in_cq}")));
    }
    if at(w, &["spec", "active"]).and_then(Value::as_bool) == Some(false)
        || text(w, &["spec", "active"]).is_some_and(|a| a.eq_ignore_ascii_case("false"))
    {
        return Some((
            Wait::Deactivated,
            "Workload spec.active is false".to_string(),
        ));
    }
    if is_true(condition(w, "QuotaReserved")) {
        return Some((
            Wait::AdmissionChecks,
            format!("quota reserved{in_cq}; waiting for admission checks"),
        ));
    }
    None
}

/// A Workload waiting for quota: what it asks for, and the reason Kueue
/// gives on `QuotaReserved=False` (Kueue 0.19 and later type it).
pub(super) struct PendingWorkload {
    pub asks: BTreeMap<String, Quantity>,
    pub reason: Option<String>,
    message: Option<String>,
}

impl PendingWorkload {
    pub fn read(w: &Value) -> Result<PendingWorkload, QueueReadError> {
        let object = format!("Workload {}", name_of(w));
        let mut asks: BTreeMap<String, Quantity> = BTreeMap::new();
        for (pi, set) in list(w, &["spec", "podSets"]).iter().enumerate() {
            let count = match at(set, &["count"]) {
                None => 1,
                Some(v) => integer(v)
                    .filter(|c| *c >= 0)
                    .ok_or_else(|| QueueReadError {
                        object: object.clone(),
                        field: format!("spec.podSets[{pi}].count"),
                        message: format!("must be a count, found {}", type_name(v)),
                    })?,
            };
            let path = format!("spec.podSets[{pi}].template.spec");
            let pod = pod_request(at(set, &["template", "spec"]), &object, &path)?;
            for (resource, q) in pod {
                let total = q
                    .checked_mul(count.unsigned_abs())
                    .unwrap_or(Quantity::from_milli(i128::MAX));
                let entry = asks.entry(resource).or_insert(Quantity::ZERO);
                *entry = add(*entry, total);
            }
        }
        let waiting = condition(w, "QuotaReserved").filter(|c| !is_true(Some(c)));
        Ok(PendingWorkload {
            asks,
            reason: waiting
                .and_then(|c| text(c, &["reason"]))
                .map(str::to_string),
            message: waiting
                .and_then(|c| text(c, &["message"]))
                .map(str::to_string),
        })
    }

    /// Kueue's message, else its reason, else `default`.
    pub fn words_or(&self, default: &str) -> String {
        self.message
            .as_deref()
            .or(self.reason.as_deref())
            .unwrap_or(default)
            .to_string()
    }
}

/// A pod's effective request (what the scheduler and Kueue count): its
/// containers' requests summed, a limit standing in for a missing request;
/// at least any one init container's; plus the pod's overhead.
fn pod_request(
    spec: Option<&Value>,
    object: &str,
    path: &str,
) -> Result<BTreeMap<String, Quantity>, QueueReadError> {
    let Some(spec) = spec else {
        return Ok(BTreeMap::new());
    };
    let mut sum: BTreeMap<String, Quantity> = BTreeMap::new();
    for (ci, c) in list(spec, &["containers"]).iter().enumerate() {
        for (resource, q) in container_request(c, object, &format!("{path}.containers[{ci}]"))? {
            let entry = sum.entry(resource).or_insert(Quantity::ZERO);
            *entry = add(*entry, q);
        }
    }
    for (ci, c) in list(spec, &["initContainers"]).iter().enumerate() {
        let field = format!("{path}.initContainers[{ci}]");
        for (resource, q) in container_request(c, object, &field)? {
            let entry = sum.entry(resource).or_insert(Quantity::ZERO);
            *entry = (*entry).max(q);
        }
    }
    for (resource, q) in entries(at(spec, &["overhead"])) {
        let q = quantity(q, object, &format!("{path}.overhead.{resource}"))?;
        let entry = sum.entry(resource.clone()).or_insert(Quantity::ZERO);
        *entry = add(*entry, q);
    }
    Ok(sum)
}

fn container_request(
    c: &Value,
    object: &str,
    path: &str,
) -> Result<BTreeMap<String, Quantity>, QueueReadError> {
    let mut out = BTreeMap::new();
    for (resource, q) in entries(at(c, &["resources", "requests"])) {
        let field = format!("{path}.resources.requests.{resource}");
        out.insert(resource.clone(), quantity(q, object, &field)?);
    }
    for (resource, q) in entries(at(c, &["resources", "limits"])) {
        if !out.contains_key(resource) {
            let field = format!("{path}.resources.limits.{resource}");
            out.insert(resource.clone(), quantity(q, object, &field)?);
        }
    }
    Ok(out)
}

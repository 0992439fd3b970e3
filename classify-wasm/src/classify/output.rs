//! Section 3: the job and submission of an observation, and the order
//! observations are listed in.

use crate::observation::Observation;

/// Section 3.1: the job and submission of a name and its labels.
pub fn job_and_submission(
    name: &str,
    job_label: Option<&str>,
    sub_label: Option<&str>,
) -> (String, String) {
    let job = match job_label {
        Some(j) => j.to_string(),
        None => match name.rsplit_once('-') {
            Some((before, _)) => before.to_string(),
            None => name.to_string(),
        },
    };
    let submission = match sub_label {
        Some(s) => s.to_string(),
        None => {
            let prefix = format!("{job}-");
            if let Some(rest) = name.strip_prefix(prefix.as_str()) {
                rest.to_string()
            } else if let Some((_, after)) = name.rsplit_once('-') {
                after.to_string()
            } else {
                String::new()
            }
        }
    };
    (job, submission)
}

/// Sort key: namespace, job, TrainJobs before orphans, kind, name. `str`
/// compares by UTF-8 bytes, and the caller's sort is stable.
pub(super) fn order(a: &Observation, b: &Observation) -> std::cmp::Ordering {
    fn key(o: &Observation) -> (&str, &str, bool, &str, &str) {
        (
            o.object.namespace.as_str(),
            o.job.as_str(),
            o.object.kind != "TrainJob",
            o.object.kind.as_str(),
            o.object.name.as_str(),
        )
    }
    key(a).cmp(&key(b))
}

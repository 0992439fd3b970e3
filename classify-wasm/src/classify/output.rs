//! Section 3: the job and submission of an observation. The order
//! observations are listed in is [`crate::Observation::cmp_order`].

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

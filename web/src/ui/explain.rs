//! The explanation of one observation: the deciding rule first, then every
//! rule, the cause rule, the findings timeline, the execution table, the
//! attempts (every execution with its own cause), the notes and the objects
//! read, as YAML.

use classify_wasm::{AttemptTrace, CauseKind, Explanation, NoteTrace, RuleTrace, Verdict};
use leptos::prelude::*;
use serde_json::Value;

use super::table::{CauseBadge, StateBadge};
use crate::history::HistoryView;
use crate::timeline;
use crate::yaml::to_yaml;

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Matched => "verdict matched",
        Verdict::NotMatched => "verdict not-matched",
        Verdict::NotReached => "verdict not-reached",
    }
}

fn rule_row(r: RuleTrace) -> impl IntoView {
    let v = r.verdict;
    view! {
        <li class=format!("rule {}", verdict_class(v))>
            <div class="rule-head">
                <span class="rule-id">{format!("rule {}", r.id)}</span>" "
                <span class="rule-name">{r.name}</span>" "
                <span class=verdict_class(v)>{v.word()}</span>
            </div>
            <ul class="facts">{r.facts.into_iter().map(|f| view! { <li>{f}</li> }).collect_view()}</ul>
        </li>
    }
}

fn notes(title: &'static str, id: &'static str, list: Vec<NoteTrace>) -> impl IntoView {
    (!list.is_empty()).then(|| {
        view! {
            <section id=id>
                <h3>{title}</h3>
                <ul class="notes">{list.into_iter().map(|n| view! {
                    <li><span class="rule-id">{n.rule}</span>" "{n.text}</li>
                }).collect_view()}</ul>
            </section>
        }
    })
}

fn timeline_view(e: &Explanation) -> impl IntoView {
    let findings = e.trace.findings.clone();
    if findings.is_empty() {
        return view! { <p class="muted">"No pod findings in the current execution."</p> }
            .into_any();
    }
    let width = 900.0;
    let l = timeline::layout(&findings, width);
    let pods = l.pods.clone().into_iter().map(|(p, y)| {
        view! {
            <line x1=timeline::LABEL_WIDTH x2=width - 10.0 y1=y y2=y class="lane" />
            <text x=timeline::LABEL_WIDTH - 6.0 y=y + 4.0 text-anchor="end" class="pod-label">{p}</text>
        }
    }).collect_view();
    let marks = l.marks.iter().filter_map(|m| Some((m, findings.get(m.index)?))).map(|(m, f)| {
        let class = format!(
            "mark cause-{}{}{}",
            f.kind.as_str(),
            if f.captured { " captured" } else { "" },
            if f.winner { " winner" } else { "" }
        );
        let source = f.source.word();
        let tip = format!(
            "{}{}: {} (rank {}) at {} via {}: {}{}",
            f.pod,
            if f.captured { " (captured)" } else { "" },
            f.kind.as_str(),
            f.rank,
            f.date.as_deref().unwrap_or("undated"),
            source,
            f.detail,
            if f.winner { " — the winner" } else { "" }
        );
        let (x, y) = (m.x, m.y);
        view! {
            <g class=class data-winner=f.winner.to_string() data-captured=f.captured.to_string()>
                <title>{tip}</title>
                {f.winner.then(|| view! { <circle cx=x cy=y r="12" class="halo" /> })}
                <circle cx=x cy=y r="7" class="dot" />
            </g>
        }
    }).collect_view();
    let span = l.span.map(|((_, x0), (_, x1))| {
        let first = findings.iter().filter_map(|f| f.date.clone()).min().unwrap_or_default();
        let last = findings.iter().filter_map(|f| f.date.clone()).max().unwrap_or_default();
        let h = l.height - 6.0;
        view! {
            <text x=x0 y=h class="axis" text-anchor="start">{first}</text>
            {(x1 - x0 > 200.0).then(|| view! { <text x=x1 y=h class="axis" text-anchor="end">{last}</text> })}
        }
    });
    let undated = l
        .undated_x
        .map(|x| view! { <text x=x y=14.0 class="axis" text-anchor="middle">"undated"</text> });
    let legend = view! {
        <p class="legend">
            "Time runs left to right, one lane per pod. Colour and hover text give the kind; "
            <span class="key-winner">"ringed"</span>" = the winner; "
            <span class="key-captured">"hollow, dashed"</span>" = from a captured (deleted) pod."
        </p>
    };
    let list = findings
        .iter()
        .map(|f| {
            view! {
                <tr class:winner=f.winner>
                    <td>{f.date.clone().unwrap_or_else(|| "undated".into())}</td>
                    <td>{f.pod.clone()}{f.captured.then_some(" (captured)")}</td>
                    <td><CauseBadge cause=f.kind /></td>
                    <td>{f.rank}</td>
                    <td>{f.source.word()}</td>
                    <td>{f.detail.clone()}</td>
                    <td>{if f.winner { "winner" } else { "" }}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <svg class="timeline" role="img" aria-label="pod findings over time" viewBox=format!("0 0 {width} {}", l.height) width=width height=l.height>
            {pods}{span}{undated}{marks}
        </svg>
        {legend}
        <table class="findings">
            <thead><tr><th>"date"</th><th>"pod"</th><th>"kind"</th><th>"rank"</th><th>"source"</th><th>"detail"</th><th></th></tr></thead>
            <tbody>{list}</tbody>
        </table>
    }
    .into_any()
}

/// One row of the attempts table, as text (the cluster's words stay text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRow {
    pub execution: String,
    pub current: bool,
    /// `None` when the attempt's pods have no finding.
    pub kind: Option<CauseKind>,
    pub provenance: String,
    pub detail: String,
    pub pods: String,
}

/// The attempts table's rows, newest first as the engine orders them.
pub fn attempt_rows(attempts: &[AttemptTrace]) -> Vec<AttemptRow> {
    attempts
        .iter()
        .map(|a| AttemptRow {
            execution: a.execution.to_string(),
            current: a.current,
            kind: a.cause.as_ref().map(|c| c.kind),
            provenance: a
                .cause
                .as_ref()
                .and_then(|c| c.provenance)
                .map(|p| p.as_str().to_string())
                .unwrap_or_default(),
            detail: a
                .cause
                .as_ref()
                .map_or_else(|| "no finding".to_string(), |c| c.detail.clone()),
            pods: a.pods.join(", "),
        })
        .collect()
}

fn attempts_view(attempts: &[AttemptTrace]) -> impl IntoView {
    let rows = attempt_rows(attempts);
    if rows.is_empty() {
        return view! { <p class="muted">"No attempts: no pod counts towards an execution."</p> }
            .into_any();
    }
    let body = rows
        .into_iter()
        .map(|r| {
            view! {
                <tr class:current=r.current data-current=r.current.to_string()>
                    <td class="exec">{r.execution}</td>
                    <td>{if r.current { "current" } else { "" }}</td>
                    <td>{match r.kind { Some(k) => view! { <CauseBadge cause=k /> }.into_any(), None => view! { <span class="muted">"none"</span> }.into_any() }}</td>
                    <td>{r.provenance}</td>
                    <td class="detail">{r.detail}</td>
                    <td class="pods">{r.pods}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <p class="legend">"Every execution (A, J) of this TrainJob, newest first, each with the winner of its own pods' findings. The current one's findings are listed under Pod findings; an older one's pods are in the Execution table."</p>
        <table class="attempts-table">
            <thead><tr><th>"execution"</th><th>"current"</th><th>"cause"</th><th>"provenance"</th><th>"detail"</th><th>"pods"</th></tr></thead>
            <tbody>{body}</tbody>
        </table>
    }
    .into_any()
}

/// The server's record of the object's changes, oldest first (the live
/// page), or why there is none (the offline page).
fn history_view(history: Signal<HistoryView>) -> impl IntoView {
    move || {
        let h = history.get();
        let rows = match &h {
            HistoryView::Recorded { changes, .. } if !changes.is_empty() => Some(
                changes
                    .iter()
                    .map(|c| {
                        view! {
                            <tr>
                                <td>{c.at.clone()}</td>
                                <td>{c.state.clone()}</td>
                                <td>{c.cause.clone()}</td>
                                <td>{if c.held { "held" } else { "" }}</td>
                            </tr>
                        }
                    })
                    .collect_view(),
            ),
            _ => None,
        };
        let class = match h {
            HistoryView::Recorded { .. } => "history-line",
            _ => "muted",
        };
        view! {
            <p id="history-text" class=class>{h.summary()}</p>
            {rows.map(|rows| view! {
                <table class="history-table">
                    <thead><tr><th>"at (UTC)"</th><th>"state"</th><th>"cause"</th><th>"held"</th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            })}
        }
    }
}

#[component]
pub fn ExplainView(
    explanation: Explanation,
    objects: Vec<Value>,
    on_back: Callback<()>,
    /// Only the server records history; the offline page passes `NotKept`.
    #[prop(into)]
    history: Signal<HistoryView>,
    /// The queue section's lines (`QueueBook::section`); empty hides it.
    #[prop(into)]
    queue: Signal<Vec<String>>,
) -> impl IntoView {
    let o = explanation.observation.clone();
    let t = explanation.trace.clone();
    let timeline = timeline_view(&explanation);
    let attempts = attempts_view(&explanation.trace.attempts);
    let exec_current = t
        .execution
        .current
        .map(|e| format!("current execution: {e}"))
        .unwrap_or_else(|| "no current execution: no pod counts towards one".into());
    let exec_rows = t
        .execution
        .pods
        .into_iter()
        .map(|p| {
            view! {
                <tr class:current=p.in_current>
                    <td>{p.pod}{p.captured.then_some(" (captured)")}</td>
                    <td>{p.admission.unwrap_or_default()}</td>
                    <td>{p.restart_attempt.unwrap_or_default()}</td>
                    <td>{p.r.map(|r| r.to_string()).unwrap_or_default()}</td>
                    <td>{if p.counted { "counted" } else { "not counted" }}</td>
                    <td>{if p.in_current { "current" } else { "" }}</td>
                    <td>{p.why}</td>
                </tr>
            }
        })
        .collect_view();
    let yaml = objects
        .iter()
        .map(to_yaml)
        .collect::<Vec<_>>()
        .join("---\n");
    let count = objects.len();
    view! {
        <article class="explain">
            <button class="link back" on:click=move |_| on_back.run(())>"← back to the table"</button>
            <h2>
                <span class="kind">{o.object.kind.clone()}</span>" "{o.object.name.clone()}" "
                <StateBadge state=o.state />" "<CauseBadge cause=o.cause.kind />
            </h2>
            <p class="decided" id="decided-by">{t.decided_by}</p>
            <dl class="summary">
                <dt>"job"</dt><dd>{o.job.clone()}</dd>
                <dt>"submission"</dt><dd>{o.submission.clone()}</dd>
                <dt>"namespace"</dt><dd>{o.object.namespace.clone()}</dd>
                <dt>"held"</dt><dd>{match (o.held, o.hold_instance) { (true, Some(i)) => format!("yes, instance {i}"), (true, None) => "yes".into(), _ => "no".into() }}</dd>
                <dt>"foreign"</dt><dd>{if o.foreign { "yes" } else { "no" }}</dd>
                <dt>"cause provenance"</dt><dd>{o.cause.provenance.map(|p| p.as_str()).unwrap_or("none")}</dd>
                <dt>"detail"</dt><dd class="detail" id="explain-detail">{o.cause.detail.clone()}</dd>
            </dl>
            {move || {
                let lines = queue.get();
                (!lines.is_empty()).then(|| view! {
                    <section id="queue"><h3>"Queue"</h3>
                        <ul class="queue-lines">{lines.into_iter().map(|l| view! { <li>{l}</li> }).collect_view()}</ul>
                    </section>
                })
            }}
            <section id="rules"><h3>"Rules"</h3><ol class="rules">{t.rules.into_iter().map(rule_row).collect_view()}</ol></section>
            <section id="cause-rule"><h3>"Cause rule"</h3>
                {match t.cause { Some(c) => view! { <ul class="rules">{rule_row(c)}</ul> }.into_any(), None => view! { <p class="muted">"No cause rule applies."</p> }.into_any() }}
            </section>
            <section id="findings"><h3>"Pod findings"</h3>{timeline}</section>
            <section id="execution"><h3>"Execution"</h3>
                <p>{exec_current}</p>
                <table class="exec-table">
                    <thead><tr><th>"pod"</th><th>"A"</th><th>"J"</th><th>"R"</th><th>"counted"</th><th>"in current"</th><th>"why"</th></tr></thead>
                    <tbody>{exec_rows}</tbody>
                </table>
            </section>
            <section id="attempts"><h3>"Attempts"</h3>{attempts}</section>
            <section id="history"><h3>"History"</h3>{history_view(history)}</section>
            {notes("Foreign notes", "foreign-notes", t.foreign)}
            {notes("Situation notes", "situation-notes", t.situation)}
            <details id="objects"><summary>{format!("The {count} objects read, as YAML")}</summary><pre>{yaml}</pre></details>
        </article>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn explained(name: &str) -> Explanation {
        let path = format!(
            "{}/../classify-wasm/cases/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        classify_wasm::explain(&doc["snapshot"].to_string(), Default::default())
            .unwrap()
            .remove(0)
    }

    #[test]
    fn attempt_rows_show_every_execution_newest_first() {
        let e = explained("attempts-oom-node-lost-exit");
        let rows = attempt_rows(&e.trace.attempts);
        let summary: Vec<(&str, bool, Option<CauseKind>, &str, &str)> = rows
            .iter()
            .map(|r| {
                (
                    r.execution.as_str(),
                    r.current,
                    r.kind,
                    r.provenance.as_str(),
                    r.pods.as_str(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "A=1 J=2",
                    true,
                    Some(CauseKind::NonZeroExit),
                    "pod",
                    "train-1-s1-node-0-0-c2"
                ),
                (
                    "A=1 J=1",
                    false,
                    Some(CauseKind::NodeLost),
                    "captured-pod",
                    "train-1-s1-node-0-0-b1"
                ),
                (
                    "A=1 J=0",
                    false,
                    Some(CauseKind::OutOfMemory),
                    "captured-pod",
                    "train-1-s1-node-0-0-a0"
                ),
            ]
        );
        assert_eq!(
            rows[2].detail,
            "pod train-1-s1-node-0-0-a0: node container terminated: OOMKilled, exit code 137"
        );
    }

    #[test]
    fn an_attempt_without_a_finding_says_so() {
        let e = explained("attempts-readmission-ties");
        let rows = attempt_rows(&e.trace.attempts);
        assert_eq!(rows.len(), 5);
        assert!(rows[0].current);
        assert_eq!(
            (rows[0].kind, rows[0].detail.as_str()),
            (None, "no finding")
        );
        assert_eq!(rows[0].provenance, "");
        assert!(rows[1..].iter().all(|r| !r.current));
    }
}

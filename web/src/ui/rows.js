// The table's new rows, built in one call from wasm (web/src/ui/table.rs,
// `row_elements`): the rows' text comes as one JSON array of arrays, and each
// row is a deep clone of the template with its text filled in. Built from
// wasm a call at a time, the same rows cost a dozen boundary crossings and
// string copies each, which was a fifth of a 1,000-TrainJob first paint.
//
// Every value is set as text (textContent, nodeValue, attributes), never as
// HTML: it is the cluster's.
//
// A row's fields, in order (ROW_FIELDS in table.rs): key, state, cause, job,
// submission, kind, name, held, foreign, execution, attempts, attempts'
// title, detail, recent (0 or 1).
export function buildRows(template, json) {
  const rows = JSON.parse(json);
  const built = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const [key, state, cause, job, submission, kind, name, held, foreign, execution,
      attempts, title, detail, recent] = rows[i];
    const tr = template.cloneNode(true);
    tr.setAttribute('data-key', key);
    tr.setAttribute('data-state', state);
    tr.setAttribute('data-cause', cause);
    if (recent) tr.className = 'recent';
    const c = tr.cells;
    if (job) c[0].textContent = job;
    if (submission) c[1].textContent = submission;
    const button = c[2].firstChild;
    button.firstChild.textContent = kind;
    button.lastChild.nodeValue = ' ' + name;
    const stateBadge = c[3].firstChild;
    stateBadge.className = 'badge state-' + state;
    stateBadge.textContent = state;
    const causeBadge = c[4].firstChild;
    causeBadge.className = 'badge cause-' + cause;
    causeBadge.textContent = cause;
    if (held) c[5].textContent = held;
    if (foreign) c[6].textContent = foreign;
    if (execution) c[7].textContent = execution;
    if (attempts) c[8].textContent = attempts;
    if (title) c[8].setAttribute('title', title);
    if (detail) c[9].textContent = detail;
    built[i] = tr;
  }
  return built;
}

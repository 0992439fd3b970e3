// The table's rows, built and filled in from wasm (web/src/ui/table.rs,
// `ShownRows`): the rows' text comes as one JSON array of arrays. A new row
// is a deep clone of the template with its text filled in; a changed row's
// element is filled in again in place. Built from wasm a call at a time,
// the same rows cost a dozen boundary crossings and string copies each,
// which was a fifth of a 1,000-TrainJob first paint.
//
// Every value is set as text (textContent, nodeValue, attributes), never as
// HTML: it is the cluster's.
//
// A row's fields, in order (ROW_FIELDS in table.rs): key, state, cause, job,
// submission, kind, name, held, foreign, execution, attempts, attempts'
// title, detail, recent (0 or 1).

// Fills `tr` (a clone of the template) with one row's fields. A `fresh`
// clone has nothing in it yet, so its empty fields are left alone; a row
// filled before has every field set, emptied ones included.
function fill(tr, row, fresh) {
  const [key, state, cause, job, submission, kind, name, held, foreign, execution,
    attempts, title, detail, recent] = row;
  const text = (element, value) => {
    if (value || !fresh) element.textContent = value;
  };
  tr.setAttribute('data-key', key);
  tr.setAttribute('data-state', state);
  tr.setAttribute('data-cause', cause);
  if (recent || !fresh) tr.className = recent ? 'recent' : '';
  const c = tr.cells;
  text(c[0], job);
  text(c[1], submission);
  const button = c[2].firstChild;
  button.firstChild.textContent = kind;
  button.lastChild.nodeValue = ' ' + name;
  const stateBadge = c[3].firstChild;
  stateBadge.className = 'badge state-' + state;
  stateBadge.textContent = state;
  const causeBadge = c[4].firstChild;
  causeBadge.className = 'badge cause-' + cause;
  causeBadge.textContent = cause;
  text(c[5], held);
  text(c[6], foreign);
  text(c[7], execution);
  text(c[8], attempts);
  if (title) c[8].setAttribute('title', title);
  else if (!fresh) c[8].removeAttribute('title');
  // c[9] is the queue cell, which table.rs fills from the queue facts.
  text(c[10], detail);
  // A cell does not wrap (rows have one height, web/src/row_window.rs): the
  // whole detail is its hover.
  if (detail) c[10].setAttribute('title', detail);
  else if (!fresh) c[10].removeAttribute('title');
}

// New rows: one clone of `template` per row of `json`, in order.
export function buildRows(template, json) {
  const rows = JSON.parse(json);
  const built = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const tr = template.cloneNode(true);
    fill(tr, rows[i], true);
    built[i] = tr;
  }
  return built;
}

// Rows shown before, filled in again: `elements[i]` with row `i` of `json`.
export function fillRows(elements, json) {
  const rows = JSON.parse(json);
  for (let i = 0; i < rows.length && i < elements.length; i++) {
    fill(elements[i], rows[i], false);
  }
}

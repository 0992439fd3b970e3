// The offline page's Web Worker (web/src/ui/offline_worker.rs starts it;
// web/src/offline_worker.rs says what it does). It loads the page's own
// module and wasm, whose hashed names the page sends first, then hands every
// message to the wasm's `offline_worker_message`: parsing and classifying a
// big dump happens here, never on the page's thread. Messages that come
// while the wasm loads wait for it, in order.
let deliver = null;
const waiting = [];

self.onmessage = async ({ data }) => {
  if (data && data.load) {
    try {
      const app = await import(data.load.js);
      await app.default({ module_or_path: data.load.wasm });
      deliver = app.offline_worker_message;
    } catch (e) {
      // The page says the worker failed and offers the CLI.
      self.postMessage({ broken: String(e) });
      return;
    }
    for (const message of waiting.splice(0)) deliver(message);
    return;
  }
  if (deliver) deliver(data);
  else waiting.push(data);
};

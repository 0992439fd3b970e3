//! `dispatch-dash classify`: a snapshot or kubectl dump in, observations out,
//! as JSON, a kubectl-style table, explanations for a person to read
//! (`explain`, rendered by the engine's `explanations_text`), the same
//! explanation values as JSON (`explain-json`, what the wasm `explain`
//! returns), or each observation with its attempts (`attempts-json`, the
//! values of the dashboard stream's `rows` event). When the dump holds
//! LocalQueues or ClusterQueues, both explanations carry each queued
//! TrainJob's queue facts (`classify_wasm::queue`): a `queue:` section in
//! the text, a `queue` field beside the observation in the JSON.
//!
//! Bad input exits with status 2 and one line on stderr:
//! `error: <source>:<line>:<column>: <what is wrong>`.
//!
//! Built for one big dump on a machine with cores to spare: a big JSON file
//! is read piece by piece, never whole ([`classify_wasm::Streamed`]); any
//! other big file is read by two threads; either way the engine parses and
//! classifies on two, and the tree is leaked rather than freed before the
//! process exits (see [`run`]).

use std::fmt::Write as _;
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use classify_wasm::{queue, Mode, Observation, Options};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
    Explain,
    /// The explanation values (observation and trace) as JSON, exactly what
    /// the wasm `explain` returns, for scripts.
    ExplainJson,
    /// Each observation with its TrainJob's attempts (every execution,
    /// newest first, with its cause) as JSON: the values of the dashboard
    /// stream's `rows` event.
    AttemptsJson,
}

#[derive(Debug, clap::Args)]
pub struct ClassifyArgs {
    /// The snapshot or dump to read; `-` or nothing reads standard input.
    pub file: Option<PathBuf>,
    /// How to print the observations.
    #[arg(long, short, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Override the mode the input declares or implies.
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// Override whether Nodes may be read (section 2).
    #[arg(long, value_name = "true|false")]
    pub nodes_readable: Option<bool>,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{source_name}:{error}")]
    Input {
        source_name: String,
        error: classify_wasm::InputError,
    },
    #[error("{source_name}: {error}")]
    Read {
        source_name: String,
        error: std::io::Error,
    },
}

/// The input named by `file`, read whole.
fn read_input(file: Option<&PathBuf>) -> Result<(String, Bytes), Error> {
    match file {
        Some(path) if path.as_os_str() != "-" => {
            let name = path.display().to_string();
            read_file(path)
                .map(|bytes| (name.clone(), bytes))
                .map_err(|error| Error::Read {
                    source_name: name,
                    error,
                })
        }
        _ => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|error| Error::Read {
                    source_name: "<stdin>".into(),
                    error,
                })?;
            Ok(("<stdin>".into(), Bytes::Heap(bytes)))
        }
    }
}

/// An input's bytes: on the heap, or, for a big file, in a mapping of
/// its own (see [`read_file`]).
enum Bytes {
    Heap(Vec<u8>),
    Mapped(memmap2::MmapMut),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Heap(bytes) => bytes,
            Bytes::Mapped(bytes) => bytes,
        }
    }
}

/// Below this size a file is read by one thread into the heap: a second
/// thread and a mapping would cost more to set up than they save.
const PARALLEL_READ_MIN: u64 = 4 << 20;

/// The size of the pieces two threads share out when reading a big file
/// (a multiple of a huge page).
const READ_PIECE: usize = 4 << 20;

/// A file's bytes, like `std::fs::read`. A big regular file is read by two
/// threads into a buffer that is an anonymous mapping asking the kernel for
/// huge pages: the copy out of the page cache and the faults of the fresh
/// buffer's pages are most of the cost of reading a dump. Two threads split
/// them over two cores, and 2 MiB pages take a 69 MB dump's 17,000 page
/// faults down to about 35. Without huge pages (or with the advice refused)
/// the mapping is an ordinary one. No file is mapped, so the bytes cannot
/// change under the parser.
///
/// The threads take 4 MiB pieces in turn rather than a fixed half each: on
/// a busy or virtual machine one core's first touches of fresh memory can
/// be several times slower than the other's, and a thread done with its
/// half waited up to 70 ms for the other's.
#[cfg(unix)]
fn read_file(path: &std::path::Path) -> std::io::Result<Bytes> {
    use std::os::unix::fs::FileExt;

    let file = std::fs::File::open(path)?;
    let metadata = file.metadata()?;
    let heap = || std::fs::read(path).map(Bytes::Heap);
    let Ok(len) = usize::try_from(metadata.len()) else {
        return heap();
    };
    if !metadata.is_file() || metadata.len() < PARALLEL_READ_MIN {
        return heap();
    }
    let Ok(mut bytes) = memmap2::MmapMut::map_anon(len) else {
        return heap();
    };
    #[cfg(target_os = "linux")]
    {
        // Only advice: refused, the pages are small ones.
        let _ = bytes.advise(memmap2::Advice::HugePage);
    }
    let pieces = std::sync::Mutex::new(bytes.chunks_mut(READ_PIECE).enumerate());
    let read_pieces = || -> std::io::Result<()> {
        loop {
            let next = pieces
                .lock()
                .map_err(|_| std::io::Error::other("a reading thread panicked"))?
                .next();
            let Some((index, piece)) = next else {
                return Ok(());
            };
            file.read_exact_at(piece, (index * READ_PIECE) as u64)?;
        }
    };
    let read = std::thread::scope(|scope| {
        let other = std::thread::Builder::new().spawn_scoped(scope, read_pieces);
        // Without a second thread, this one reads every piece.
        let mine = read_pieces();
        let theirs = match other {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(std::io::ErrorKind::Other.into())),
            Err(_) => Ok(()),
        };
        mine.and(theirs)
    });
    match read {
        Ok(()) => {
            // The file may have grown since its size was read: what was
            // appended is read too, as `std::fs::read` would.
            let mut rest = Vec::new();
            let mut tail = &file;
            std::io::Seek::seek(&mut tail, std::io::SeekFrom::Start(len as u64))?;
            tail.read_to_end(&mut rest)?;
            if rest.is_empty() {
                return Ok(Bytes::Mapped(bytes));
            }
            let mut whole = bytes.to_vec();
            whole.extend_from_slice(&rest);
            Ok(Bytes::Heap(whole))
        }
        // It shrank (or a piece failed): read it again the plain way, so that
        // the bytes, or the error, are what `std::fs::read` gives.
        Err(_) => heap(),
    }
}

#[cfg(not(unix))]
fn read_file(path: &std::path::Path) -> std::io::Result<Bytes> {
    std::fs::read(path).map(Bytes::Heap)
}

/// Runs the subcommand and renders its output as text.
///
/// The input and its tree are leaked, not freed: the tree of a big dump is
/// about a million small allocations, freeing them took a tenth of the run,
/// and this runs once in a process that exits right after printing, which
/// gives all of it back at once (leaking is safe code; nothing is left
/// undone, since neither owns anything but memory).
pub fn run(args: &ClassifyArgs, width: Option<usize>) -> Result<String, Error> {
    let options = Options {
        mode: args.mode,
        nodes_readable: args.nodes_readable,
    };
    if let Some(rendered) = streamed(args, options, width) {
        return Ok(rendered);
    }
    let (source_name, bytes) = read_input(args.file.as_ref())?;
    let input_error = |error| Error::Input {
        source_name: source_name.clone(),
        error,
    };
    let text = classify_wasm::as_text(&bytes).map_err(input_error)?;
    let parsed = classify_wasm::Parsed::new_on_two_threads(text).map_err(input_error)?;
    // Explanations carry the queue facts of a dump that holds LocalQueues
    // or ClusterQueues (read once more, as JSON values: only such dumps).
    let queues = if explains(args.output) && queue::may_hold_queues(text) {
        queue::facts_in_snapshot(text, &queue::Visibility::default()).map_err(input_error)?
    } else {
        Vec::new()
    };
    let rendered = render(
        args.output,
        width,
        |o| parsed.classify(o),
        |o| parsed.explain(o),
        |o| parsed.classify_with_attempts(o),
        options,
        &queues,
    );
    std::mem::forget(parsed);
    std::mem::forget(bytes);
    rendered.map_err(input_error)
}

/// The output of a big JSON file read piece by piece
/// ([`classify_wasm::Streamed`]): its bytes are never all in memory, which
/// on a 69 MB dump spares a buffer the size of the file and the faults of
/// its fresh pages. None for any other input, and for one that has an
/// error, which the whole-input path then reads and names with its line and
/// column. Once it is rendered, the tree and its arenas are leaked, as in
/// [`run`].
#[cfg(unix)]
fn streamed(args: &ClassifyArgs, options: Options, width: Option<usize>) -> Option<String> {
    // Explanations may carry queue facts, which read the input whole.
    if explains(args.output) {
        return None;
    }
    let path = args.file.as_ref().filter(|p| p.as_os_str() != "-")?;
    let file = std::fs::File::open(path).ok()?;
    let metadata = file.metadata().ok()?;
    if !metadata.is_file() || metadata.len() < PARALLEL_READ_MIN {
        return None;
    }
    let mut arenas = classify_wasm::Arenas::default();
    let input = FileInput(file);
    let streamed = classify_wasm::Streamed::new(&input, metadata.len(), &mut arenas).ok()?;
    let rendered = render(
        args.output,
        width,
        |o| streamed.classify(o),
        |o| streamed.explain(o),
        |o| streamed.classify_with_attempts(o),
        options,
        &[],
    )
    .ok()?;
    std::mem::forget(streamed);
    std::mem::forget(arenas);
    Some(rendered)
}

#[cfg(not(unix))]
fn streamed(_: &ClassifyArgs, _: Options, _: Option<usize>) -> Option<String> {
    None
}

/// A file, read at offsets by the stream's threads.
#[cfg(unix)]
struct FileInput(std::fs::File);

#[cfg(unix)]
impl classify_wasm::ReadAt for FileInput {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(&self.0, buf, offset)
    }
}

/// The output `output` asks for, from whichever classification gives it.
fn render<E>(
    output: Output,
    width: Option<usize>,
    classify: impl Fn(Options) -> Result<Vec<Observation>, E>,
    explain: impl Fn(Options) -> Result<Vec<classify_wasm::Explanation>, E>,
    classify_with_attempts: impl Fn(Options) -> Result<Vec<classify_wasm::Attempted>, E>,
    options: Options,
    queues: &[queue::JobQueueFacts],
) -> Result<String, E> {
    match output {
        Output::Json => classify(options).map(|observations| pretty_json(&observations)),
        Output::Table => classify(options).map(|observations| table(&observations, width)),
        Output::Explain => explain(options)
            .map(|explained| queue::explanations_with_queues_text(&explained, queues)),
        Output::AttemptsJson => classify_with_attempts(options).map(|rows| pretty_json(&rows)),
        Output::ExplainJson => explain(options)
            .map(|explained| pretty_json(&queue::explanations_with_queues(&explained, queues))),
    }
}

fn explains(output: Output) -> bool {
    matches!(output, Output::Explain | Output::ExplainJson)
}

/// Indented JSON and a final newline.
fn pretty_json(value: &impl serde::Serialize) -> String {
    // Only derived structs of strings, numbers and booleans: nothing that
    // serde_json can refuse to write.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

pub fn main(args: ClassifyArgs) -> ExitCode {
    let stdout = std::io::stdout();
    let width = if stdout.is_terminal() {
        Some(
            std::env::var("COLUMNS")
                .ok()
                .and_then(|c| c.parse().ok())
                .or_else(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
                .unwrap_or(120),
        )
    } else {
        None
    };
    match run(&args, width) {
        Ok(text) => {
            // A closed pipe (`| head`) is not an error worth a message.
            let _ = stdout.lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", printable(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

/// Text from the cluster never reaches a terminal as control sequences (the
/// engine's rule, so the table and the explanation agree).
pub use classify_wasm::printable;

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "-"
    }
}

/// kubectl-style aligned columns; the detail is cut to `width` when given.
pub fn table(observations: &[Observation], width: Option<usize>) -> String {
    let header = [
        "NAMESPACE",
        "JOB",
        "SUBMISSION",
        "OBJECT",
        "STATE",
        "CAUSE",
        "HELD",
        "FOREIGN",
        "DETAIL",
    ];
    let rows: Vec<[String; 9]> = observations
        .iter()
        .map(|o| {
            [
                printable(&o.object.namespace),
                printable(&o.job),
                printable(&o.submission),
                printable(&format!(
                    "{}/{}",
                    o.object.kind.to_lowercase(),
                    o.object.name
                )),
                o.state.to_string(),
                o.cause.kind.to_string(),
                o.hold_instance
                    .map_or_else(|| yes(o.held).to_string(), |n| n.to_string()),
                yes(o.foreign).to_string(),
                printable(&o.cause.detail),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            match widths.get(i) {
                Some(&w) if i + 1 < cells.len() => {
                    let _ = write!(text, "{cell:<w$}   ");
                }
                _ => text.push_str(cell),
            }
        }
        let text = text.trim_end();
        match width {
            Some(w) if text.chars().count() > w => {
                let cut: String = text.chars().take(w.saturating_sub(1)).collect();
                out.push_str(&cut);
                out.push('…');
            }
            _ => out.push_str(text),
        }
        out.push('\n');
    };
    line(&header);
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&cells);
    }
    out
}

use super::*;

/// The word-at-a-time scan stops exactly at the first byte that ends a
/// string's fast path, wherever it sits in a word or in the bytes left
/// after the last word, with more special bytes after it or not; a
/// byte next to one (`!` after `"`, `]` after `\\`, the space after the
/// controls) or outside ASCII never stops it.
#[test]
fn plain_run_end_stops_at_every_special_byte() {
    let plain = [b'a', b'!', b' ', b']', 0x7f, 0x80, 0xc3, 0xff];
    let specials = [b'"', b'\\', 0x00, 0x0a, 0x1f];
    for len in 0..24 {
        for filler in plain {
            let bytes = vec![filler; len];
            for from in 0..=len {
                assert_eq!(
                    json::plain_run_end(&bytes, from),
                    len,
                    "len {len} from {from}"
                );
            }
            for special in specials {
                for at in 0..len {
                    let mut bytes = bytes.clone();
                    bytes[at] = special;
                    // A second special byte later must not move the end.
                    for later in specials {
                        let mut bytes = bytes.clone();
                        if let Some(b) = bytes.get_mut(at + 3) {
                            *b = later;
                        }
                        for from in 0..=at {
                            assert_eq!(
                                json::plain_run_end(&bytes, from),
                                at,
                                "{special:#x} at {at} of {len}, from {from}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn the_key_prefilter_passes_every_read_key_and_stops_others() {
    for key in READ_KEYS {
        assert!(may_be_read_key(key), "{key}");
    }
    for other in [
        "apiVersion",
        "imagePullPolicy",
        "env",
        "",
        "é",
        "volumes",
        "x",
    ] {
        assert!(!may_be_read_key(other), "{other}");
    }
}

/// A pod of one container, its one label `label` an escaped string.
#[cfg(not(target_arch = "wasm32"))]
fn pod_item(i: usize, label: &str) -> String {
    format!(
        "{{\"kind\":\"Pod\",\"metadata\":{{\"name\":\"p{i}\",\"labels\":{{\"{label}\":\"\\u00e9{i}\"}}}},\"spec\":{{\"containers\":[{{\"name\":\"c\"}}]}}}}"
    )
}

/// A kubectl List of `n` such pods, one per line.
#[cfg(not(target_arch = "wasm32"))]
fn pod_list(n: usize, label: &str) -> String {
    let items: Vec<String> = (0..n).map(|i| pod_item(i, label)).collect();
    format!(
        "{{\"apiVersion\":\"v1\",\"items\":[\n{}\n],\"kind\":\"List\"}}",
        items.join(",\n")
    )
}

/// Parsed on two threads, a List gives the same tree as on one (the
/// second thread's items spliced in at the split), and each broken
/// variant the same error, wherever the break is relative to the split.
// wasm has no threads, and no two-thread entry points to test.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn two_threads_parse_what_one_parses() {
    let text = pod_list(12_000, "a");
    let split = json::split_guess(text.as_bytes()).expect("a split");
    assert!(text[split..].starts_with("{\"kind\":\"Pod\""));
    let shape = |r: Result<Node<'_>, json::Error>| match r {
        Ok(node) => format!("{node:?}"),
        Err(e) => format!("error at {}: {}", e.at, e.message),
    };
    let one = shape(json::parse(&text));
    assert!(one.starts_with("Node"), "{}", &one[..one.len().min(200)]);
    assert_eq!(one, shape(json::parse_on_two_threads(&text)));
    // Breaks before, at, just after and well after the split, and in the
    // document's tail after the items.
    for at in [
        100,
        split - 2,
        split,
        split + 7,
        split + 5_000,
        text.len() - 3,
    ] {
        for bad in ["\u{1}", "]", "\""] {
            let mut broken = text.clone();
            broken.insert_str(at, bad);
            let one = shape(json::parse(&broken));
            // A control character breaks JSON anywhere; the others
            // only outside a string.
            assert!(bad != "\u{1}" || one.starts_with("error"), "at {at}");
            assert_eq!(
                one,
                shape(json::parse_on_two_threads(&broken)),
                "{bad:?} at {at}"
            );
        }
    }
}

/// A tree's Debug text without its positions (which a streamed tree
/// does not keep).
#[cfg(not(target_arch = "wasm32"))]
fn without_positions(node: &Node<'_>) -> String {
    fn clear(node: &mut Node<'_>) {
        node.at = 0;
        match &mut node.value {
            Value::Seq(items) => items.iter_mut().for_each(clear),
            Value::Fields(fields) => fields.iter_mut().for_each(clear),
            Value::Map(entries) => entries.iter_mut().for_each(|(_, v)| clear(v)),
            _ => {}
        }
    }
    let mut node = node.clone();
    clear(&mut node);
    format!("{node:?}")
}

/// An input read at most `most` bytes per call, as a pipe or a network
/// file system may give it.
#[cfg(not(target_arch = "wasm32"))]
struct Trickle<'t> {
    bytes: &'t [u8],
    most: usize,
}

#[cfg(not(target_arch = "wasm32"))]
impl ReadAt for Trickle<'_> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let from = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        let n = buf.len().min(self.most).min(self.bytes.len() - from);
        buf[..n].copy_from_slice(&self.bytes[from..from + n]);
        Ok(n)
    }
}

/// `text` streamed with windows of `pieces` and reads of at most `most`
/// bytes: the tree without positions, or None when it gave up.
#[cfg(not(target_arch = "wasm32"))]
fn streamed(text: &str, pieces: json::stream::Pieces, most: usize) -> Option<String> {
    let input = Trickle {
        bytes: text.as_bytes(),
        most,
    };
    let mut arenas = Arenas::default();
    json::stream::parse_in_pieces(&input, text.len() as u64, &mut arenas, pieces)
        .ok()
        .map(|doc| without_positions(&doc))
}

/// Streamed, a JSON object with `items` is the tree parsed whole,
/// positions aside, whatever the window's sizes and the reads' lengths,
/// with the second thread's items taken at the split or not; an input
/// with an error, or of another shape, is not streamed at all.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn streamed_lists_are_the_trees_parsed_whole() {
    use json::stream::Pieces;
    let tiny = Pieces { head: 1, items: 1 };
    let small = Pieces { head: 7, items: 50 };
    let whole = |text: &str| json::parse(text).ok().map(|doc| without_positions(&doc));
    let check = |text: &str, pieces: Pieces, most: usize| {
        let want = whole(text);
        assert_eq!(
            streamed(text, pieces, most),
            want,
            "{pieces:?}, reads of {most}: {}",
            &text[..text.len().min(300)]
        );
        want.is_some()
    };

    // Small shapes, every window size from one byte up.
    let shapes = [
        r#"{"kind":"List","items":[]}"#,
        r#"{}"#,
        r#"  {"items":[{"kind":"Pod","metadata":{"name":"a","labels":{"x":"1","dispatch.phpboyscout.uk/job-id":"j\u00e9"}}},{"kind":"Pod"}],"kind":"List","metadata":{"resourceVersion":"1"}}  "#,
        r#"{"apiVersion":"v1","items":[{"kind":"Pod","status":{"phase":"Running","restarts":12345,"active":true}}],"items":5,"captured":[{"pod":{"kind":"Pod"}}],"mode":"kueue"}"#,
        r#"{"items":[{"kind":"Pod","metadata":{"name":"é✓"}} , {"kind":"JobSet"} ]}"#,
        // Errors: in an item, after the document, cut short, in an
        // unread member, and in an escape.
        r#"{"items":[{"kind":"Pod",}]}"#,
        r#"{"items":[{"kind":"Pod"}]} x"#,
        r#"{"items":[{"kind":"Pod"}"#,
        r#"{"other":[1,2,tru],"items":[]}"#,
        r#"{"items":[{"kind":"Pod","metadata":{"name":"\u00"}}]}"#,
    ];
    let mut read = 0;
    for text in shapes {
        for head in [1, 2, 3, 5, 8, 13, 64] {
            for items in [1, 4, 9, 33, 1000] {
                for most in [1, 3, 1 << 20] {
                    read += usize::from(check(text, Pieces { head, items }, most));
                }
            }
        }
    }
    assert_eq!(read, 5 * 7 * 5 * 3, "the five good shapes stream");
    // Not a JSON object first: for the whole parser.
    for other in [
        "[{\"kind\":\"Pod\"}]",
        "\u{feff}{\"items\":[]}",
        "kind: List\nitems: []\n",
    ] {
        assert_eq!(streamed(other, small, 1 << 20), None, "{other:?}");
    }

    // Random Lists of labels and annotations of every kind.
    let mut rng = Rng::new(0x5eed_0f57_13ea_4501);
    for _ in 0..200 {
        let text = random_list(&mut rng);
        assert!(check(&text, small, 5), "{text}");
        assert!(check(&text, tiny, 1 << 20), "{text}");
    }

    // Over the two-thread size: the split is taken, with every window
    // size, and each break gives up wherever it is.
    let item = |i: usize| pod_item(i, crate::keys::JOB_ID);
    let text = pod_list(12_000, crate::keys::JOB_ID);
    let split = json::split_guess(text.as_bytes()).expect("a split");
    for pieces in [
        Pieces::default(),
        small,
        Pieces {
            head: 1,
            items: 4096,
        },
    ] {
        assert!(check(&text, pieces, 1 << 16), "{pieces:?}");
    }
    for at in [
        100,
        split - 2,
        split,
        split + 7,
        split + 5_000,
        text.len() - 3,
    ] {
        for bad in ["\u{1}", "]", "\""] {
            let mut broken = text.clone();
            broken.insert_str(at, bad);
            check(&broken, small, 1 << 16);
        }
    }

    // A wrong guess: the middle of the input is one big item whose
    // container statuses look like items, one per line. The first
    // thread passes the guess and reads on by itself.
    let containers: Vec<String> = (0..40_000)
        .map(|i| format!("{{\"name\":\"c{i}\",\"image\":\"x\"}}"))
        .collect();
    let big = format!(
        "{{\"kind\":\"Pod\",\"metadata\":{{\"name\":\"big\"}},\"status\":{{\"containerStatuses\":[\n{}\n]}}}}",
        containers.join(",\n")
    );
    let text = format!(
        "{{\"items\":[{},\n{big},\n{}],\"kind\":\"List\"}}",
        item(0),
        item(1)
    );
    let guess = json::split_guess(text.as_bytes()).expect("a guess");
    assert!(
        text[guess..].starts_with("{\"name\":\"c"),
        "the guess is a container"
    );
    assert!(check(&text, Pieces::default(), 1 << 16));
    assert!(check(&text, small, 1 << 16));
}

/// `skip` checks an unread scalar with its own arms: every scalar, good
/// or bad, gives under an unread key exactly what it gives under a read
/// key of the same length (so the same offset), alone or in a list.
#[test]
fn unread_scalars_fail_as_read_ones() {
    let scalars = [
        "true",
        "false",
        "null",
        "tru",
        "fals",
        "nul",
        "nulll",
        "-",
        "-1",
        "1.5e3",
        "1.",
        "01",
        "1e",
        "\"ok\"",
        "\"a\\nb\"",
        "\"\\x\"",
        "\"\\u12\"",
        "\"\\ud800\"",
        "\"\u{1}\"",
        "\"open",
        "\"é\"",
        "@",
        "}",
        "]",
        ",",
        "",
        "é",
    ];
    let shape = |r: Result<Node<'_>, json::Error>| match r {
        Ok(_) => "ok".to_string(),
        Err(e) => format!("error at {}: {}", e.at, e.message),
    };
    for scalar in scalars {
        for (read, unread) in [("nodeName", "nodeNamf"), ("conditions", "conditionz")] {
            for value in [scalar.to_string(), format!("[1, {scalar}]")] {
                let doc =
                    |key: &str| format!("{{\"kind\":\"Pod\",\"spec\":{{\"{key}\":{value}}}}}");
                let (read_doc, unread_doc) = (doc(read), doc(unread));
                let read_shape = shape(json::parse(&read_doc));
                let unread_shape = shape(json::parse(&unread_doc));
                // Whether the read field has the right type does not
                // matter here: the parser does not check types.
                assert_eq!(read_shape, unread_shape, "{value} under {read}");
            }
        }
    }
    // The cases above include both outcomes.
    let shape_of = |text: &str| shape(json::parse(text));
    assert_eq!(
        shape_of("{\"x\":[1, tru]}"),
        "error at 9: expected a value, found 't'"
    );
    assert_eq!(shape_of("{\"x\":[1, true]}"), "ok");
}

#[test]
fn strings_around_word_boundaries_parse_as_written() {
    for len in 0..20 {
        let body = "é".repeat(len / 2) + &"x".repeat(len % 2);
        for tail in ["", "\\n", "\\\"", "\\u00e9"] {
            let text = format!("{{\"kind\": \"{body}{tail}\"}}");
            let doc = json::parse(&text).ok().expect("parses");
            let want = body.clone()
                + match tail {
                    "\\n" => "\n",
                    "\\\"" => "\"",
                    "\\u00e9" => "é",
                    _ => "",
                };
            match doc.get("kind").map(|n| &n.value) {
                Some(Value::Str(s)) => assert_eq!(s.as_ref(), want),
                _ => panic!("no string in {text}"),
            }
            let raw = format!("{{\"kind\": \"{body}\u{1}\"}}");
            assert!(json::parse(&raw).is_err(), "a control character in {raw:?}");
        }
    }
}

use test_support::Rng;

/// A random JSON value for a labels or annotations map: mostly strings,
/// and now and then an object or a list, the wrong types that JSON and
/// YAML share (a YAML `7` or `true` is a string where a string is read).
fn free_value(rng: &mut Rng) -> String {
    match rng.below(12) {
        0..=2 => "null".into(),
        3 => "{\"name\": \"x\"}".into(),
        4 => "[\"a\"]".into(),
        5 => "\"esc\\u00e9\\n\"".into(),
        6 => "\"\"".into(),
        _ => format!("\"v{}\"", rng.below(3)),
    }
}

/// A random List of pods and TrainJobs whose labels and annotations mix
/// read keys, unread keys and read keys of the other map, with
/// duplicates and values of every type; "labels" also appears where no
/// rule reads it (under `spec`, inside a label).
fn random_list(rng: &mut Rng) -> String {
    let free_keys: Vec<&str> = LABELS_READ
        .iter()
        .chain(&ANNOTATIONS_READ)
        .copied()
        .chain(["app", "name", "kind", "controller-uid", "labels", "é"])
        .collect();
    let map = |rng: &mut Rng| {
        let entries: Vec<String> = (0..rng.below(6))
            .map(|_| format!("\"{}\": {}", *rng.pick(&free_keys), free_value(rng)))
            .collect();
        format!("{{{}}}", entries.join(", "))
    };
    let items: Vec<String> = (0..1 + rng.below(4))
        .map(|i| {
            let kind = *rng.pick(&["Pod", "TrainJob", "JobSet"]);
            format!(
                "{{\"kind\": \"{kind}\", \"metadata\": {{\"name\": \"o{i}\", \"uid\": \"u{i}\", \"labels\": {}, \"annotations\": {}}}, \"spec\": {{\"labels\": {}}}}}",
                map(rng),
                map(rng),
                map(rng)
            )
        })
        .collect();
    format!("{{\"kind\": \"List\", \"items\": [{}]}}", items.join(", "))
}

/// An unread label or annotation that is a number, a boolean, an object
/// or a list is kept, so reading the map fails on it as it always did.
#[test]
fn unread_labels_of_a_wrong_type_still_fail() {
    use crate::snapshot::{Options, Snapshot};
    for map in ["labels", "annotations"] {
        for (value, found) in [
            ("7", "a number"),
            ("false", "a boolean"),
            ("{}", "an object"),
            ("[1]", "a list"),
        ] {
            let text = format!(
                "{{\"kind\": \"Pod\", \"metadata\": {{\"{map}\": {{\"app\": \"x\", \"zone\": {value}, \"b\": null}}}}}}"
            );
            let column = text.find(&format!(": {value}, ")).expect("the value") + 3;
            let documents = parse(&text).expect("JSON");
            let error = Snapshot::read(&documents, Options::default()).map(drop);
            assert_eq!(
                error.map_err(|e| e.to_string()),
                Err(format!(
                    "1:{column}: `{map}.zone` must be a string, found {found}"
                )),
                "{text}"
            );
        }
    }
}

/// Every mapping of the tree finds the same entry for every read key by
/// its id as by its text.
fn check_ids(node: &Node<'_>) {
    if node.is_object() {
        for (key, value) in node.entries() {
            assert_eq!(value.key, read_key(key), "{key}");
            check_ids(value);
        }
        for key in READ_KEYS {
            let id = read_key(key).expect("a read key");
            assert!(
                std::ptr::eq(
                    node.get(key).map_or(std::ptr::null(), |n| n as *const _),
                    node.get_read(id)
                        .map_or(std::ptr::null(), |n| n as *const _)
                ),
                "{key}"
            );
        }
    } else if let Value::Seq(items) = &node.value {
        items.iter().for_each(check_ids);
    }
}

/// JSON drops the labels and annotations no rule reads when they are
/// strings or null; YAML (of which JSON is a subset) keeps every key.
/// Read as a snapshot, the two trees of one random input must give the
/// same views, or the same error at the same place (the type word aside:
/// a YAML scalar has none). Both trees look fields up by id as by text.
#[test]
fn json_without_the_unread_labels_reads_as_yaml_with_all_of_them() {
    use crate::snapshot::{Options, Snapshot};
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let (mut read, mut failed) = (0, 0);
    for _ in 0..400 {
        let text = random_list(&mut rng);
        let json = parse(&text).expect("JSON");
        assert!(json.source.is_json());
        let yaml = Documents {
            source: Source::new(&text, SourceKind::Yaml),
            docs: yaml::parse(&text).expect("YAML"),
        };
        for doc in json.docs.iter().chain(&yaml.docs) {
            check_ids(doc);
        }
        let outcome =
            |documents: &Documents<'_>| match Snapshot::read(documents, Options::default()) {
                // What the rules can see of the labels and annotations, and
                // what they make of the whole.
                Ok(snap) => {
                    let metas = snap
                        .trainjobs
                        .iter()
                        .map(|t| &t.meta)
                        .chain(snap.jobsets.iter().map(|j| &j.meta))
                        .chain(snap.pods.iter().map(|p| &p.meta));
                    let seen: Vec<_> = metas
                        .map(|m| {
                            let labels = LABELS_READ.map(|k| m.label(k));
                            let annotations = ANNOTATIONS_READ.map(|k| m.annotation(k));
                            format!("{} {labels:?} {annotations:?}", m.name)
                        })
                        .collect();
                    format!(
                        "{seen:?} {:?}",
                        crate::classify::classify(&snap, crate::classify::Threads::One)
                    )
                }
                Err(e) => format!("error {e}")
                    .replace("a number", "a scalar")
                    .replace("a boolean", "a scalar"),
            };
        let from_json = outcome(&json);
        assert_eq!(from_json, outcome(&yaml), "{text}");
        if from_json.starts_with("error") {
            failed += 1;
        } else {
            read += 1;
        }
    }
    // Both outcomes are exercised, not only one.
    assert!(read > 40 && failed > 40, "{read} read, {failed} failed");
}

/// The nodes of a YAML tree, as an alias's copy counts them (a
/// mapping's keys are text), after checking that no placeholder was
/// left in it.
fn yaml_nodes(node: &Node<'_>) -> usize {
    assert!(
        !matches!(node.value, Value::Number(_)),
        "a placeholder left at {}",
        node.at
    );
    match &node.value {
        Value::Seq(items) => 1 + items.iter().map(yaml_nodes).sum::<usize>(),
        Value::Map(entries) => 1 + entries.iter().map(|(_, v)| yaml_nodes(v)).sum::<usize>(),
        _ => 1,
    }
}

/// Aliases give the tree the same text written out gives, anchors
/// nested in an aliased node, re-defined names and keys included, with
/// the same read keys; an alias inside its own anchor's node is an
/// error.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn aliases_read_as_their_nodes_written_out() {
    let aliased = "a: &a [1, &b {name: q, kind: &c [2]}, *b]\n\
                   b: [*a, *b, *c]\n\
                   &k name: *k\n\
                   c: &a x\n\
                   status: {d: *a, *b : 3}\n";
    let written = "a: [1, {name: q, kind: [2]}, {name: q, kind: [2]}]\n\
                   b: [[1, {name: q, kind: [2]}, {name: q, kind: [2]}], {name: q, kind: [2]}, [2]]\n\
                   name: name\n\
                   c: x\n\
                   status: {d: x, {name: q, kind: [2]} : 3}\n";
    // A mapping as a key is an error either way, at the same key.
    let (aliased_error, written_error) = (yaml::parse(aliased), yaml::parse(written));
    assert_eq!(
        aliased_error.map(|_| ()).map_err(|e| e.message),
        written_error.map(|_| ()).map_err(|e| e.message)
    );
    let (aliased, written) = (
        aliased.replace(", *b : 3", ""),
        written.replace(", {name: q, kind: [2]} : 3", ""),
    );
    let (docs, copied) = yaml::parse_counting(&aliased);
    let docs = docs.expect("aliases");
    let plain = yaml::parse(&written).expect("written out");
    assert_eq!(docs.len(), 1);
    assert_eq!(without_positions(&docs[0]), without_positions(&plain[0]));
    check_ids(&docs[0]);
    // Each alias copied its node's nodes (`*b` 4, `*a` 10, `*b` 4, `*c`
    // 2, `*k` 1, the re-defined `*a` 1), and the anchored key its one.
    assert_eq!(copied, 4 + 10 + 4 + 2 + 1 + 1 + 1);
    assert_eq!(yaml_nodes(&docs[0]), yaml_nodes(&plain[0]));
    // An alias keeps its own position, its copy's insides theirs.
    let b = docs[0].get("b").expect("b");
    let Value::Seq(items) = &b.value else {
        panic!("b is a list")
    };
    assert_eq!(
        aliased.get(items[1].at as usize..).map(|r| &r[..2]),
        Some("*b")
    );
    let inner = items[1].get("name").expect("name");
    assert_eq!(aliased.get(inner.at as usize..).map(|r| &r[..1]), Some("q"));

    let own = yaml::parse("a: &r [1, *r]\n").map(|_| ());
    let e = own.expect_err("a node cannot contain itself");
    assert_eq!(e.message, "alias to an unknown anchor");
    assert_eq!((e.position.line, e.position.column), (1, 11));
}

/// 150 anchors nested around 200,000 scalars: read without a node
/// copied, and an alias to the 141st copies exactly its 200,010 nodes.
/// (Each anchored node used to be copied when it ended, 30 million
/// nodes here: 10 s and 2.2 GB in the CLI.)
#[test]
fn nested_anchors_copy_nothing() {
    let anchors: String = (0..150).map(|i| format!("&a{i} [")).collect();
    let text = format!(
        "x: {anchors}{}{}\n",
        vec!["1"; 200_000].join(","),
        "]".repeat(150)
    );
    let (docs, copied) = yaml::parse_counting(&text);
    let docs = docs.expect("nested anchors");
    assert_eq!(copied, 0);
    assert_eq!(yaml_nodes(&docs[0]), 1 + 150 + 200_000);

    let text = format!("{text}y: *a140\n");
    let (docs, copied) = yaml::parse_counting(&text);
    let docs = docs.expect("nested anchors and an alias");
    assert_eq!(copied, 10 + 200_000);
    assert_eq!(yaml_nodes(&docs[0]), 1 + 150 + 200_000 + 10 + 200_000);
}

/// A billion laughs (9 levels of 9 aliases each) is an error at the
/// first alias past the budget, the first `*a5`, after copying only
/// the levels below it: 9 aliases each to `a0` (10 nodes) up to `a4`
/// (66,430).
#[test]
fn a_billion_laughs_stop_at_the_budget() {
    let mut lines = vec![format!("a0: &a0 [{}]", ["lol"; 9].join(", "))];
    for k in 1..10 {
        let aliases = vec![format!("*a{}", k - 1); 9];
        lines.push(format!("a{k}: &a{k} [{}]", aliases.join(", ")));
    }
    let text = lines.join("\n");
    let (docs, copied) = yaml::parse_counting(&text);
    let e = docs.map(|_| ()).expect_err("too many nodes");
    assert_eq!(e.message, "aliases expand to too many nodes");
    assert_eq!((e.position.line, e.position.column), (7, 10));
    assert_eq!(copied, 9 * (10 + 91 + 820 + 7_381 + 66_430));
    assert!(copied <= MAX_ALIAS_NODES);
}

/// 100,000 anchors and 500,000 aliases to them: each alias finds its
/// anchor by id (this used to scan the anchors, 25 billion comparisons)
/// and copies its one node.
#[test]
fn many_anchors_and_aliases_copy_a_node_each() {
    let lookup = |i: usize| (i * 7_919) % 100_000;
    let anchors = (0..100_000).map(|i| format!("- &a{i} v{i}"));
    let aliases = (0..500_000).map(|i| format!("- *a{}", lookup(i)));
    let text = anchors.chain(aliases).collect::<Vec<_>>().join("\n");
    let (docs, copied) = yaml::parse_counting(&text);
    let docs = docs.expect("anchors and aliases");
    assert_eq!(copied, 500_000);
    let Value::Seq(items) = &docs[0].value else {
        panic!("a list")
    };
    assert_eq!(items.len(), 600_000);
    for (i, item) in items.iter().enumerate() {
        let j = if i < 100_000 { i } else { lookup(i - 100_000) };
        assert!(
            matches!(&item.value, Value::Plain(v) if *v == format!("v{j}")),
            "{i}"
        );
    }
}

/// An alias may nest the tree as deep as the same node written out may
/// and no deeper: a chain of anchors each 255 levels around an alias
/// to the last took a few KB to nest tens of thousands of levels, and
/// overflowed the stack when the tree was copied, converted or dropped.
#[test]
fn aliases_nest_no_deeper_than_written_nodes() {
    let deep = format!("d0: &d0 {}1{}\n", "[".repeat(255), "]".repeat(255));
    // Under the document's mapping, 256 levels: as deep as allowed.
    let text = format!("{deep}d1: *d0\n");
    let (docs, copied) = yaml::parse_counting(&text);
    assert_eq!(docs.map(|d| d.len()), Ok(1));
    assert_eq!(copied, 256);
    let written = format!("d1: {}1{}\n", "[".repeat(255), "]".repeat(255));
    assert!(yaml::parse(&written).is_ok());
    // One level more is the error a written node gets, at the alias.
    let text = format!("{deep}d1: [*d0]\n");
    let (docs, copied) = yaml::parse_counting(&text);
    let e = docs.map(|_| ()).expect_err("too deep");
    assert_eq!(
        e.message,
        format!("nested more than {MAX_DEPTH} levels deep")
    );
    assert_eq!((e.position.line, e.position.column), (2, 6));
    assert_eq!(copied, 0);
    // (saphyr-parser refuses that written node first, in its own words.)
    let written = format!("d1: {}1{}\n", "[".repeat(256), "]".repeat(256));
    assert!(yaml::parse(&written).is_err());
    // The chain: each link 255 levels around an alias to the last.
    let chain: String = (1..88)
        .map(|k| {
            format!(
                "d{k}: &d{k} {}*d{}{}\n",
                "[".repeat(255),
                k - 1,
                "]".repeat(255)
            )
        })
        .collect();
    let e = yaml::parse(&format!("{deep}{chain}"))
        .map(|_| ())
        .expect_err("too deep");
    assert_eq!((e.position.line, e.position.column), (2, 264));
}

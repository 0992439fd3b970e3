//! A dump picked or dropped on the offline page. Its text never reaches
//! the textarea unless asked for: Chromium lays out every line a textarea
//! holds, which for a dump of tens of megabytes costs seconds. The page
//! shows the file's name and size instead, and its worker reads the file
//! (`crate::offline_worker`). A file larger than the page can hold is
//! refused before a byte of it is read.

/// The largest dump the page reads. The text is held by JavaScript (two
/// bytes a character), copied into the engine's memory and parsed into a
/// tree several times its size, and wasm32 has 4 GiB in all: past this a
/// tab would run out of memory, so the CLI, which reads any size, is the
/// tool.
pub const MAX_DUMP_BYTES: u64 = 256 * 1024 * 1024;

/// A dump picked from a file, shown by its name and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickedFile {
    pub name: String,
    pub size: u64,
}

impl PickedFile {
    /// What the page says of the file in place of its text.
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, size_text(self.size))
    }
}

/// Whether a file of `size` bytes may be read; the refusal names the limit
/// and the CLI.
pub fn admit(name: &str, size: u64) -> Result<(), String> {
    if size <= MAX_DUMP_BYTES {
        return Ok(());
    }
    Err(format!(
        "{name} is {}, more than the {} this page can classify: run dispatch-dash classify {name} in a terminal instead, which reads any size",
        size_text(size),
        size_text(MAX_DUMP_BYTES)
    ))
}

/// A byte count as people read file sizes: `812 bytes`, `4.0 KiB`,
/// `68.2 MiB`, `1.5 GiB`.
pub fn size_text(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if bytes >= unit {
            // Tenths, rounded down, in integers: no float formatting.
            let tenths = bytes.saturating_mul(10) / unit;
            return format!("{}.{} {name}", tenths / 10, tenths % 10);
        }
    }
    if bytes == 1 {
        "1 byte".into()
    } else {
        format!("{bytes} bytes")
    }
}

/// A file size as the browser gives it (`File.size`, a double), in bytes;
/// a size that is not a count is taken as too large to read.
pub fn size_of(browser_size: f64) -> u64 {
    if browser_size.is_finite() && browser_size >= 0.0 {
        // Rounded: a size is whole bytes, far below 2^53.
        browser_size.round() as u64
    } else {
        u64::MAX
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(size_text(0), "0 bytes");
        assert_eq!(size_text(1), "1 byte");
        assert_eq!(size_text(1023), "1023 bytes");
        assert_eq!(size_text(1024), "1.0 KiB");
        assert_eq!(size_text(68 * 1024 * 1024 + 200 * 1024), "68.1 MiB");
        assert_eq!(size_text(MAX_DUMP_BYTES), "256.0 MiB");
        assert_eq!(size_text(3 << 29), "1.5 GiB");
        // Saturated, never overflowed.
        assert_eq!(size_text(u64::MAX), "1717986918.3 GiB");
    }

    #[test]
    fn a_dump_past_the_limit_is_refused_with_the_limit_and_the_cli() {
        assert_eq!(admit("dump.yaml", MAX_DUMP_BYTES), Ok(()));
        let refused = admit("big.yaml", MAX_DUMP_BYTES + 1).expect_err("refused");
        assert!(
            refused.starts_with("big.yaml is 256.0 MiB, more than the 256.0 MiB"),
            "{refused}"
        );
        assert!(
            refused.contains("dispatch-dash classify big.yaml"),
            "{refused}"
        );
        let huge = admit("huge.json", 300 << 20).expect_err("refused");
        assert!(huge.starts_with("huge.json is 300.0 MiB"), "{huge}");
    }

    #[test]
    fn the_browsers_size_is_whole_bytes_and_nonsense_is_too_large() {
        assert_eq!(size_of(4096.0), 4096);
        assert_eq!(size_of(f64::NAN), u64::MAX);
        assert_eq!(size_of(-1.0), u64::MAX);
        assert!(admit("x", size_of(f64::INFINITY)).is_err());
        let file = PickedFile {
            name: "dump.yaml".into(),
            size: 2048,
        };
        assert_eq!(file.label(), "dump.yaml (2.0 KiB)");
    }
}

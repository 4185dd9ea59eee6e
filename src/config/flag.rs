//! What `trawl crawl` makes of an option, as plain data in the option's entry: the binary
//! turns it into a clap argument, so the library never sees clap.

/// The `cli:` part of an entry of [`crawl_options!`](crate::crawl_options). The flag is
/// `--` and the option's key unless [`Flag::named`].
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    /// How the flag takes its value.
    pub kind: FlagKind,
    /// The flag without `--`, when it is not the key (`header` for `headers`).
    pub long: Option<&'static str>,
    /// The value's placeholder in the help (`N`, `DURATION`).
    pub value_name: &'static str,
    /// The only values accepted, when there is such a list.
    pub values: &'static [&'static str],
    /// The help, when the option's doc would not fit the flag.
    pub help: Option<&'static str>,
}

/// How a [`Flag`] takes its value.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// A number, checked as one on the command line; the config layer checks its range.
    Int,
    /// Text the config layer parses (a duration, a size, a rate, a name).
    Text,
    /// A file, stored absolute so that resuming from another directory uses the same one.
    Path,
    /// Repeatable: every value given, in order.
    List,
    /// No value: given, it sets the option to this.
    Switch(bool),
}

impl Flag {
    const fn new(kind: FlagKind, value_name: &'static str) -> Flag {
        Flag {
            kind,
            long: None,
            value_name,
            values: &[],
            help: None,
        }
    }

    /// A number (`--max-pages 500`).
    pub const fn int(value_name: &'static str) -> Flag {
        Flag::new(FlagKind::Int, value_name)
    }

    /// A value the config layer parses (`--timeout 30s`).
    pub const fn text(value_name: &'static str) -> Flag {
        Flag::new(FlagKind::Text, value_name)
    }

    /// A file, made absolute (`--warc site.warc.gz`).
    pub const fn path(value_name: &'static str) -> Flag {
        Flag::new(FlagKind::Path, value_name)
    }

    /// A repeatable value (`--exclude /tag/ --exclude /page/`).
    pub const fn list(value_name: &'static str) -> Flag {
        Flag::new(FlagKind::List, value_name)
    }

    /// A flag without a value that sets the option to `sets`.
    pub const fn switch(sets: bool) -> Flag {
        Flag::new(FlagKind::Switch(sets), "")
    }

    /// The flag is `--long` instead of the key (`--header` for `headers`, `--no-cookies`).
    pub const fn named(self, long: &'static str) -> Flag {
        Flag {
            long: Some(long),
            ..self
        }
    }

    /// Only these values are accepted (and completed).
    pub const fn one_of(self, values: &'static [&'static str]) -> Flag {
        Flag { values, ..self }
    }

    /// This help instead of the option's doc, where the flag says something else (a
    /// switch that turns an option off).
    pub const fn help(self, help: &'static str) -> Flag {
        Flag {
            help: Some(help),
            ..self
        }
    }
}

//! Enums whose variants have stable names (stored in files, shown in reports, given as
//! flags): one macro writes their `ALL`, `as_str`, `Display` and `FromStr`, so every such
//! enum reads and writes its names the same way.

/// Define `enum $name` with a stable name per variant: `ALL` (every variant, in order),
/// `as_str`, `Display`, and `FromStr` (whose error says what was expected, `$what`).
///
/// ```ignore
/// stable_names! {
///     /// A colour.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq)]
///     pub enum Colour ("colour") {
///         /// Like blood.
///         Red = "red",
///         /// Like grass.
///         Green = "green",
///     }
/// }
/// ```
macro_rules! stable_names {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every variant, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The stable name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let names: Vec<&str> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    format!(concat!("unknown ", $what, " {:?}; expected one of {}"), s, names.join(", "))
                })
            }
        }
    };
}

pub(crate) use stable_names;

//! The plain `with_*` setter of the option builders.

/// `pub fn $name(self, v) -> Self` setting `self.$field`.
macro_rules! setter {
    ($(#[$doc:meta])* $name:ident, $field:ident, $ty:ty) => {
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, v: $ty) -> Self {
            self.$field = v;
            self
        }
    };
}
pub(crate) use setter;

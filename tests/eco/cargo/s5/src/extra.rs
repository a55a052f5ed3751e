/// S5's new module: one more source file in the binary crate.
pub fn footer() -> &'static str {
    "built offline"
}

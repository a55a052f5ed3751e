//! `sbx enforce` (in progress).

use super::EnforceArgs;

pub fn run(_a: EnforceArgs) -> anyhow::Result<u8> {
    anyhow::bail!("enforce is not implemented yet")
}

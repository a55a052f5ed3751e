//! Streaming trace writer.

/// Writes a trace.
#[derive(Debug)]
pub struct TraceWriter<W: std::io::Write> {
    _out: W,
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

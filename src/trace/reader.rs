//! Trace reader.

/// Reads a trace.
#[derive(Debug)]
pub struct TraceReader<R: std::io::Read> {
    _inp: R,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

//! The Python package's native part: the engine's calls on a path or on Arrow data, with
//! the GIL released, handing back the report and each row's decision.
//!
//! Every call is the engine's (or the page crate's, for `report`), typed: no argument is
//! the command line's. Reports come back as the JSON the program prints, so that the
//! package gives exactly what the program does.

use std::sync::Arc;

use arrow_array::{RecordBatchReader, UInt32Array};
use arrow_schema::{DataType, Field};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3_arrow::PyArray;
use pyo3_arrow::input::AnyRecordBatch;
use ratelimit_input::catalog::ArrowData;
use ratelimit_input::progress::Stop;

use ratelimit_engine::error::Error;

use self::errors::{Data, raise};

mod compare;
mod errors;
mod keywords;
mod limit;
mod live;
mod lossless;
mod parts;
mod recommend;
mod replay;
mod report;
mod settled;
mod settled_parts;

// Large buffers in huge pages, as the program's: fewer page faults as they fill.
#[global_allocator]
static ALLOCATOR: ratelimit_engine::huge_pages::HugePages = ratelimit_engine::huge_pages::HugePages;

/// What `__reduce__` gives pickle: what rebuilds an object, and its arguments.
pub(crate) type Reduced<'py> = (Bound<'py, PyAny>, Bound<'py, pyo3::types::PyTuple>);

/// Runs `work` on a thread of its own, while this one, Python's, looks for its signals
/// every 50 ms: at Ctrl-C the work's reads are stopped (through the [`Stop`](Stop)
/// it is given), and the signal's exception (`KeyboardInterrupt`) is returned beside what
/// the work gave. Python runs a signal's handler only on its main thread, between its own
/// steps; work run on that thread would keep it until it ends.
pub(crate) fn interruptible<T: Send, E: Send + From<anyhow::Error>>(
    work: impl FnOnce(Stop) -> Result<T, E> + Send,
) -> (Result<T, E>, Option<PyErr>) {
    use std::sync::mpsc::RecvTimeoutError;
    let stop = Stop::new();
    let (send, answers) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        let asked = stop.clone();
        scope.spawn(move || drop(send.send(work(asked))));
        let mut interrupted = None;
        loop {
            match answers.recv_timeout(std::time::Duration::from_millis(50)) {
                Ok(answer) => return (answer, interrupted),
                Err(RecvTimeoutError::Timeout) if interrupted.is_none() => {
                    if let Err(interrupt) = Python::attach(|py| py.check_signals()) {
                        stop.stop();
                        interrupted = Some(interrupt);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                // The thread ended without an answer: it panicked, which the scope passes on.
                Err(RecvTimeoutError::Disconnected) => {
                    let ended = anyhow::anyhow!("the command's thread ended");
                    return (Err(ended.into()), interrupted);
                }
            }
        }
    })
}

/// Warns of each of `notes`, as a `RatelimitWarning` of the line `stacklevel` frames up
/// (1 is the Python function that called this one): the package's caller's.
pub(crate) fn warn(py: Python<'_>, notes: &[String], stacklevel: i32) -> PyResult<()> {
    let category = errors::warning(py)?;
    for note in notes {
        let text = std::ffi::CString::new(note.replace('\0', " ")).unwrap_or_default();
        PyErr::warn(py, &category, &text, stacklevel)?;
    }
    Ok(())
}

/// Returns the rows of `data` in ascending order of `columns` (nulls first, rows alike in
/// their own order), as an Arrow array of row numbers for `take`: the rows of a bucket an
/// engine hands over unsorted. The GIL is released meanwhile.
#[pyfunction]
fn order_by<'py>(
    py: Python<'py>,
    data: AnyRecordBatch,
    columns: Vec<String>,
    name: String,
) -> PyResult<Bound<'py, PyAny>> {
    let data = table(data, name)?;
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let order = py.detach(|| data.order_by(&columns)).map_err(read_error)?;
    let field = Arc::new(Field::new("row", DataType::UInt32, false));
    Ok(PyArray::new(Arc::new(UInt32Array::from(order)), field).into_pyobject(py)?.into_any())
}

/// Raises ValueError, naming the first row out of order, unless the rows of `data` are in
/// ascending order of `columns` as `order_by` orders them: the check of an order an engine
/// promised. The GIL is released meanwhile.
#[pyfunction]
fn check_order(
    py: Python<'_>,
    data: AnyRecordBatch,
    columns: Vec<String>,
    name: String,
) -> PyResult<()> {
    let data = table(data, name)?;
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    py.detach(|| data.check_order(&columns)).map_err(read_error)
}

/// The exception of a read of Arrow data that failed ([`raise`]).
fn read_error(err: ratelimit_input::catalog::ReadError) -> PyErr {
    raise(Error::from(anyhow::Error::new(err)), Data::Arrow)
}

/// The exception of a read of files that failed ([`raise`]).
pub(crate) fn read_file_error(err: ratelimit_input::catalog::ReadError) -> PyErr {
    raise(Error::from(anyhow::Error::new(err)), Data::File)
}

/// Takes the record batches of `data` as they are (its buffers are shared, not copied),
/// named `name` in reports and messages. Data that does not match its schema is a
/// `ValueError`, whether arrow-rs's import says so or asserts it ([`importing`]).
pub(crate) fn table(data: AnyRecordBatch, name: String) -> PyResult<ArrowData> {
    let cannot = |why: String| PyValueError::new_err(format!("cannot read the Arrow data: {why}"));
    let (schema, batches) = importing(|| {
        let reader = data.into_reader()?;
        let schema = reader.schema();
        let batches = reader.collect::<Result<Vec<_>, _>>().map_err(|err| cannot(producer(&err)));
        PyResult::Ok((schema, batches?))
    })
    .map_err(|panic| cannot(format!("it does not match its schema ({panic})")))??;
    for (n, batch) in batches.iter().enumerate() {
        let theirs = batch.schema();
        let fields = theirs.fields().iter().map(|f| (f.name(), f.data_type()));
        if !fields.eq(schema.fields().iter().map(|f| (f.name(), f.data_type()))) {
            return Err(cannot(format!("batch {n} does not match the schema: {theirs}")));
        }
    }
    Ok(ArrowData::new(name, schema, batches))
}

/// What a producer's error says, in one line: a Python exception the producer raised comes
/// with its traceback, which is left out, and its message's line breaks are spaces.
fn producer(err: &arrow_schema::ArrowError) -> String {
    let text = err.to_string();
    let said = text.split_once(". Detail: Python exception:").map_or(&text[..], |(said, _)| said);
    spaced(said.strip_prefix("C Data interface error: Unknown error: ").unwrap_or(said))
}

/// `text` on one line: its runs of white space, line breaks among them, one space each.
fn spaced(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

thread_local! {
    /// Whether a panic on this thread is being caught by [`importing`], and not printed.
    static IMPORTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `import`, which reads a producer's C data through arrow-rs: its import asserts what
/// malformed data breaks, and such a panic is the producer's fault, not this program's. It
/// is caught, unprinted, and its message returned as the error.
fn importing<T>(import: impl FnOnce() -> T) -> Result<T, String> {
    IMPORTING.set(true);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(import));
    IMPORTING.set(false);
    result.map_err(|panic| {
        let text = (panic.downcast_ref::<String>().map(String::as_str))
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a malformed array");
        spaced(text)
    })
}

/// Each limiter's name, in the registry's order, whether it takes a burst, and whether it
/// is one of the program's own exact limiters (which `compare` puts side by side by
/// default) rather than a model of a system.
#[pyfunction]
fn limiters() -> Vec<(&'static str, bool, bool)> {
    let all = ratelimit_core::limiter::Algorithm::ALL;
    all.into_iter().map(|a| (a.name(), a.uses_burst(), !a.is_system())).collect()
}

/// The module `ratelimit_replay._native`.
#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // A panic that `importing` catches is an error it raises: not printed. Any other is
    // printed as before.
    let printed = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !IMPORTING.get() {
            printed(info);
        }
    }));
    module.add_function(wrap_pyfunction!(report::report, module)?)?;
    module.add_function(wrap_pyfunction!(replay::replay, module)?)?;
    module.add_function(wrap_pyfunction!(replay::shorthand, module)?)?;
    module.add_function(wrap_pyfunction!(settled::settled_replay, module)?)?;
    module.add_function(wrap_pyfunction!(settled_parts::settled_method, module)?)?;
    module.add_function(wrap_pyfunction!(settled_parts::settled_part, module)?)?;
    module.add_function(wrap_pyfunction!(settled_parts::settled_merge, module)?)?;
    module.add_function(wrap_pyfunction!(settled_parts::flight_block, module)?)?;
    module.add_function(wrap_pyfunction!(settled::min_limit, module)?)?;
    module.add_function(wrap_pyfunction!(settled::min_tier, module)?)?;
    module.add_function(wrap_pyfunction!(settled::presets, module)?)?;
    module.add_function(wrap_pyfunction!(lossless::min_bucket, module)?)?;
    module.add_function(wrap_pyfunction!(lossless::min_rate, module)?)?;
    module.add_function(wrap_pyfunction!(recommend::recommend, module)?)?;
    module.add_class::<recommend::RecommendParts>()?;
    module.add_function(wrap_pyfunction!(lossless::curve, module)?)?;
    module.add_function(wrap_pyfunction!(compare::compare, module)?)?;
    module.add_function(wrap_pyfunction!(compare::configurations, module)?)?;
    module.add_class::<live::Limiter>()?;
    module.add_class::<live::SettlingLimiter>()?;
    module.add_class::<limit::PyLimit>()?;
    module.add_class::<limit::PyPolicy>()?;
    module.add_class::<lossless::Sizing>()?;
    module.add_function(wrap_pyfunction!(lossless::chunk_lines, module)?)?;
    module.add_function(wrap_pyfunction!(lossless::merge_chunks, module)?)?;
    module.add_function(wrap_pyfunction!(parts::range_starts, module)?)?;
    module.add_class::<parts::Parts>()?;
    module.add_function(wrap_pyfunction!(order_by, module)?)?;
    module.add_function(wrap_pyfunction!(check_order, module)?)?;
    module.add_function(wrap_pyfunction!(limiters, module)?)?;
    Ok(())
}

"""Plain numpy dtypes pickled by name come back as numpy's own instances (what ufunc.at's fast
path needs), as Ray's object store carries a study's graph and functional runs."""

import io
import pickle

import numpy as np

from simulator import functional_run
from simulator import load_graph
from tuner.dtype_pickling import pickle_dtypes_by_name


def _round_trip(value, dispatch_table=None):
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    if dispatch_table is not None:
        pickler.dispatch_table = dispatch_table
    pickler.dump(value)
    return pickle.loads(buffer.getvalue())


def test_plain_dtypes_come_back_as_numpys_own():
    pickle_dtypes_by_name()
    for code in "?bBhHiIlLqQefdgFD":
        array = np.arange(4).astype(code)
        loaded = _round_trip(array)
        assert loaded.dtype is np.dtype(loaded.dtype.str) and loaded.dtype == array.dtype
        assert np.array_equal(loaded, array)
    # numpy's own pickling hands back a copy of the dtype: the reason for the reducers
    copied = _round_trip(np.arange(4), dispatch_table={})
    assert copied.dtype == np.dtype(np.int64) and copied.dtype is not np.dtype(np.int64)


def test_dtypes_a_name_would_change_keep_numpys_pickling():
    pickle_dtypes_by_name()
    tagged = np.dtype(np.int32, metadata={"unit": "cycles"})
    assert _round_trip(np.zeros(3, dtype=tagged)).dtype.metadata == {"unit": "cycles"}
    big_endian = np.arange(3, dtype=">i8")
    loaded = _round_trip(big_endian)
    assert loaded.dtype.str == ">i8" and loaded.tolist() == [0, 1, 2]
    record = np.zeros(2, dtype=[("a", "<i4"), ("b", "<f8")])
    assert _round_trip(record).dtype == record.dtype


def test_a_functional_run_comes_back_with_numpys_dtypes():
    pickle_dtypes_by_name()
    graph = load_graph("road:rows=8,cols=9,seed=1")
    loaded = _round_trip((graph, functional_run(graph, "bfs")))[1]
    for array in (loaded.indptr, loaded.indices, loaded.iterations[1].active,
                  loaded.iterations[1].writes):
        assert array.dtype is np.dtype(array.dtype.str)

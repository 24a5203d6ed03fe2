// The `coll` Python module: enums, coll.Error, coll.init() and the classes bound in
// errors.cc, work.cc and communicator.cc.
#include <chrono>

#include "bindings.h"

namespace coll::python {
namespace {

const char* const kModuleDoc = R"doc(coll: collective communication on numpy arrays.

    import numpy as np, coll
    comm = coll.init()                      # from collrun / torchrun / mpirun / srun
    x = np.full(1024, comm.rank, np.float32)
    comm.allreduce(x).wait()                # in place: x = sum over ranks
    parts = comm.allgather(x).get()         # new array, shape (comm.size, 1024)

Every op is asynchronous and returns a coll.Work: wait(timeout=None) -> bool, test(),
error(), get() -> the result array, .result, .sequence. Arrays must be C-contiguous numpy
arrays of float16/32/64, int8/32/64 or uint8/32/64 (bfloat16 has no numpy dtype); only their
element counts matter. ``recv`` is optional everywhere: None means in place for allreduce,
broadcast and reduce, and a newly allocated output for allgather, reduce_scatter, alltoall,
gather and scatter. Failures raise coll.Error, whose ``code`` names the cause ('Timeout',
'PeerLost', 'Mismatch', 'InvalidArgument', 'Unsupported', 'Transport', 'Internal'); bad
Python arguments raise TypeError or ValueError before anything is sent. Waiting, init and
closing release the GIL.
)doc";

}  // namespace
}  // namespace coll::python

PYBIND11_MODULE(_coll, m) {
  namespace py = pybind11;
  using namespace coll::python;
  m.doc() = kModuleDoc;

  py::enum_<coll::DataType>(m, "DataType")
      .value("float32", coll::DataType::f32)
      .value("float64", coll::DataType::f64)
      .value("float16", coll::DataType::f16)
      .value("bfloat16", coll::DataType::bf16)
      .value("int8", coll::DataType::i8)
      .value("uint8", coll::DataType::u8)
      .value("int32", coll::DataType::i32)
      .value("uint32", coll::DataType::u32)
      .value("int64", coll::DataType::i64)
      .value("uint64", coll::DataType::u64);
  py::enum_<coll::ReduceOp>(m, "ReduceOp")
      .value("sum", coll::ReduceOp::sum)
      .value("prod", coll::ReduceOp::prod)
      .value("min", coll::ReduceOp::min)
      .value("max", coll::ReduceOp::max)
      .value("avg", coll::ReduceOp::avg);

  bindErrors(m);
  bindWork(m);
  bindCommunicator(m);

  m.def("init", [] {
        std::unique_ptr<coll::Communicator> comm;
        {
          py::gil_scoped_release release;  // waits for the other ranks (bounded by COLL_TIMEOUT)
          comm = coll::Communicator::fromEnvironment();
        }
        return std::make_unique<PyCommunicator>(std::move(comm));
      },
      "init() -> Communicator\n\n"
      "Joins the job the launcher started (collrun, torchrun, Open MPI, MPICH, Slurm; MASTER_ADDR/\n"
      "MASTER_PORT override). Raises coll.Error: InvalidArgument when the environment is\n"
      "incomplete, Timeout when the others do not arrive within COLL_TIMEOUT.");
  m.def("join", [](const std::string& store_address, const std::string& secret, const std::string& name,
                   double timeout) {
        coll::CommOptions o;
        o.store_address = store_address;
        o.secret = secret;
        o.name = name;
        if (timeout > 0) o.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout * 1000));
        std::unique_ptr<coll::Communicator> comm;
        {
          py::gil_scoped_release release;  // waits for the members' grow() (bounded)
          comm = coll::Communicator::join(o);
        }
        return std::make_unique<PyCommunicator>(std::move(comm));
      },
      py::arg("store_address"), py::arg("secret") = "", py::arg("name") = "world", py::arg("timeout") = 0.0,
      "join(store_address, secret='', name='world', timeout=0) -> Communicator\n\n"
      "A new process joins a running job through its store ('host:port'; secret '' takes COLL_JOB_SECRET):\n"
      "it waits until the members call grow(), then is a rank of the communicator grow() makes.\n"
      "Raises coll.Error: Timeout when no member grows within timeout (0: COLL_TIMEOUT).");
  m.def(
      "alloc",
      [](const py::object& shape, const py::object& dtype) {
        std::vector<py::ssize_t> dims;  // an int, as numpy.zeros takes, or a sequence of ints
        if (py::isinstance<py::int_>(shape)) dims.push_back(shape.cast<py::ssize_t>());
        else
          for (py::handle d : py::iter(shape)) dims.push_back(d.cast<py::ssize_t>());
        return libraryArray(dims, py::dtype::from_args(dtype));
      },
      py::arg("shape"), py::arg("dtype") = py::dtype("float32"),
      "alloc(shape, dtype=numpy.float32) -> numpy.ndarray\n\n"
      "A zeroed array in the library's own memory (collMemAlloc): ranks on the same host read a\n"
      "large message sent from it with one plain copy, where from other memory the kernel copies\n"
      "(process_vm_readv) or the message goes through shared slots in two copies. Use it for the\n"
      "buffers a job sends every step. Freed when the last array viewing it is.");
  m.attr("__version__") = COLL_VERSION_STRING;
  m.attr("SPLIT_NOCOLOR") = coll::kSplitNoColor;
  m.attr("ANY_SOURCE") = coll::kAnySource;
}

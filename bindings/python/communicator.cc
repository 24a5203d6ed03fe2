// coll.Communicator: the collectives on numpy arrays.
//
// Every op returns a coll.Work at once; `work.result` is the array the op writes (read it after
// work.wait(), or use work.get()). Buffers are numpy arrays, C-contiguous, of one dtype
// (float16/32/64, int8/32/64, uint8/32/64); their element counts are what matters, not their
// shapes. `recv` is optional everywhere:
//
//   allreduce(send, recv=None, op="sum")    recv None or send: in place
//   broadcast(buf, root=0, recv=None)       recv None: in place in buf (read on the root only)
//   reduce(send, recv=None, op="sum", root=0)  recv None: in place on the root
//   allgather(send, recv=None)              recv None: allocates (size, *send.shape);
//                                           in place when send is recv's chunk `rank`
//   reduce_scatter(send, recv=None, op="sum")  recv None: allocates send.shape[1:] when
//                                           send.shape[0] == size, else a flat chunk;
//                                           in place when recv is send's chunk `rank`
//   alltoall(send, recv=None)               recv None: allocates like send (in place: Error)
//   gather(send, recv=None, root=0)         recv None: allocates (size, *send.shape) on the root
//   scatter(send=None, recv=None, root=0)   send is read on the root only; recv None: allocates
//                                           a chunk of send (every rank must pass send then)
//   send(buf, peer, tag=0), recv(buf, peer=None, tag=0), barrier()   peer None: any source
//   set_algorithms(rules)                   COLL_ALGO's grammar, for the ops issued from now on
//
// Size or dtype mismatches raise ValueError / TypeError before anything is sent; what coll
// itself refuses raises coll.Error (code 'InvalidArgument').
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.h"

namespace coll::python {

namespace {

ReduceOp reduceOpOf(py::handle op) {
  if (py::isinstance<py::str>(op)) {
    auto name = op.cast<std::string>();
    if (auto parsed = parseReduceOp(name)) return *parsed;
    throw py::value_error("unknown reduction op '" + name + "' (sum, prod, min, max, avg)");
  }
  return op.cast<ReduceOp>();
}

std::vector<py::ssize_t> shapeOf(const py::array& a) { return {a.shape(), a.shape() + a.ndim()}; }

std::vector<py::ssize_t> stacked(int n, const py::array& chunk) {
  std::vector<py::ssize_t> shape{n};
  for (py::ssize_t d : shapeOf(chunk)) shape.push_back(d);
  return shape;
}

// The shape of one of `n` chunks of `whole`: whole.shape[1:] when the first axis has n rows.
std::vector<py::ssize_t> chunkShape(int n, const Buffer& whole, const char* op) {
  if (whole.count % static_cast<size_t>(n) != 0)
    throw py::value_error(std::string(op) + ": send has " + std::to_string(whole.count) +
                          " elements, not a multiple of the communicator size " + std::to_string(n));
  if (whole.array.ndim() >= 1 && whole.array.shape(0) == n) {
    auto shape = shapeOf(whole.array);
    return {shape.begin() + 1, shape.end()};
  }
  return {static_cast<py::ssize_t>(whole.count / static_cast<size_t>(n))};
}

void requireCount(const Buffer& b, size_t expected, const char* op, const char* what) {
  if (b.count != expected)
    throw py::value_error(std::string(op) + ": " + what + " has " + std::to_string(b.count) + " elements, expected " +
                          std::to_string(expected));
}

py::tuple keep(std::initializer_list<py::handle> arrays) {
  py::list list;
  for (py::handle a : arrays)
    if (a) list.append(a);
  return py::tuple(list);
}

// Same-sized send and recv (allreduce, broadcast, reduce on the root): recv None means in place.
Buffer recvOrSend(const Buffer& send, py::handle recv, const char* op) {
  if (recv.is_none()) return send;
  Buffer r = asBuffer(recv, "recv", Access::write);
  requireSameType(send, r);
  requireCount(r, send.count, op, "recv");
  return r;
}

PyWork allreduce(PyCommunicator& c, py::handle send_obj, py::handle recv_obj, py::handle op_obj) {
  const ReduceOp op = reduceOpOf(op_obj);
  Buffer send = asBuffer(send_obj, "send", recv_obj.is_none() ? Access::write : Access::read);
  Buffer recv = recvOrSend(send, recv_obj, "allreduce");
  return c.run(keep({send.array, recv.array}), recv.array, [&](Communicator& comm) {
    return comm.allreduce(send.data, recv.data, send.count, send.type, op);
  });
}

PyWork broadcast(PyCommunicator& c, py::handle buf_obj, int root, py::handle recv_obj) {
  const bool is_root = c.get().rank() == root;
  Buffer buf = asBuffer(buf_obj, "buf", recv_obj.is_none() ? Access::write : Access::read);
  Buffer recv = recvOrSend(buf, recv_obj, "broadcast");
  const void* send = is_root ? buf.data : recv.data;
  return c.run(keep({buf.array, recv.array}), recv.array, [&](Communicator& comm) {
    return comm.broadcast(send, recv.data, recv.count, recv.type, root);
  });
}

PyWork reduce(PyCommunicator& c, py::handle send_obj, py::handle recv_obj, py::handle op_obj, int root) {
  const ReduceOp op = reduceOpOf(op_obj);
  const bool is_root = c.get().rank() == root;
  const bool in_place = recv_obj.is_none();
  Buffer send = asBuffer(send_obj, "send", in_place && is_root ? Access::write : Access::read);
  Buffer recv = is_root ? recvOrSend(send, recv_obj, "reduce") : send;  // ignored off the root
  py::object result = is_root ? py::object(recv.array) : py::none();
  return c.run(keep({send.array, recv.array}), result, [&](Communicator& comm) {
    return comm.reduce(send.data, is_root ? recv.data : nullptr, send.count, send.type, op, root);
  });
}

PyWork allgather(PyCommunicator& c, py::handle send_obj, py::handle recv_obj) {
  const int n = c.get().size();
  Buffer send = asBuffer(send_obj, "send", Access::read);
  Buffer recv = send;
  if (recv_obj.is_none()) {
    recv = asBuffer(newArray(send.type, stacked(n, send.array)), "recv", Access::write);
  } else {
    recv = asBuffer(recv_obj, "recv", Access::write);
    requireSameType(send, recv);
    requireCount(recv, send.count * static_cast<size_t>(n), "allgather", "recv");
  }
  return c.run(keep({send.array, recv.array}), recv.array, [&](Communicator& comm) {
    return comm.allgather(send.data, recv.data, send.count, send.type);
  });
}

PyWork reduceScatter(PyCommunicator& c, py::handle send_obj, py::handle recv_obj, py::handle op_obj) {
  const ReduceOp op = reduceOpOf(op_obj);
  const int n = c.get().size();
  Buffer send = asBuffer(send_obj, "send", Access::read);
  auto shape = chunkShape(n, send, "reduce_scatter");
  Buffer recv = send;
  if (recv_obj.is_none()) {
    recv = asBuffer(newArray(send.type, shape), "recv", Access::write);
  } else {
    recv = asBuffer(recv_obj, "recv", Access::write);
    requireSameType(send, recv);
    requireCount(recv, send.count / static_cast<size_t>(n), "reduce_scatter", "recv");
  }
  return c.run(keep({send.array, recv.array}), recv.array, [&](Communicator& comm) {
    return comm.reduceScatter(send.data, recv.data, recv.count, send.type, op);
  });
}

PyWork alltoall(PyCommunicator& c, py::handle send_obj, py::handle recv_obj) {
  const int n = c.get().size();
  Buffer send = asBuffer(send_obj, "send", Access::read);
  chunkShape(n, send, "alltoall");  // divisibility
  Buffer recv = send;
  if (recv_obj.is_none()) {
    recv = asBuffer(newArray(send.type, shapeOf(send.array)), "recv", Access::write);
  } else {
    recv = asBuffer(recv_obj, "recv", Access::write);
    requireSameType(send, recv);
    requireCount(recv, send.count, "alltoall", "recv");
  }
  return c.run(keep({send.array, recv.array}), recv.array, [&](Communicator& comm) {
    return comm.alltoall(send.data, recv.data, send.count / static_cast<size_t>(n), send.type);
  });
}

PyWork gather(PyCommunicator& c, py::handle send_obj, py::handle recv_obj, int root) {
  const int n = c.get().size();
  const bool is_root = c.get().rank() == root;
  Buffer send = asBuffer(send_obj, "send", Access::read);
  py::object result = py::none();
  void* recv_data = nullptr;
  if (is_root) {
    Buffer recv = recv_obj.is_none() ? asBuffer(newArray(send.type, stacked(n, send.array)), "recv", Access::write)
                                     : asBuffer(recv_obj, "recv", Access::write);
    requireSameType(send, recv);
    requireCount(recv, send.count * static_cast<size_t>(n), "gather", "recv");
    result = recv.array;
    recv_data = recv.data;
  }
  return c.run(keep({send.array, result}), result, [&](Communicator& comm) {
    return comm.gather(send.data, recv_data, send.count, send.type, root);
  });
}

PyWork scatter(PyCommunicator& c, py::handle send_obj, py::handle recv_obj, int root) {
  const int n = c.get().size();
  const bool is_root = c.get().rank() == root;
  if (is_root && send_obj.is_none()) throw py::value_error("scatter: the root must pass send");
  if (send_obj.is_none() && recv_obj.is_none()) throw py::value_error("scatter: pass recv (or send, to size it)");
  std::optional<Buffer> send;
  if (!send_obj.is_none()) send = asBuffer(send_obj, "send", Access::read);
  Buffer recv;
  if (recv_obj.is_none()) {
    recv = asBuffer(newArray(send->type, chunkShape(n, *send, "scatter")), "recv", Access::write);
  } else {
    recv = asBuffer(recv_obj, "recv", Access::write);
  }
  if (send && is_root) {
    requireSameType(*send, recv);
    requireCount(*send, recv.count * static_cast<size_t>(n), "scatter", "send");
  }
  const void* send_data = send && is_root ? send->data : nullptr;
  return c.run(keep({send ? send->array : py::handle(), recv.array}), recv.array, [&](Communicator& comm) {
    return comm.scatter(send_data, recv.data, recv.count, recv.type, root);
  });
}

PyWork sendTo(PyCommunicator& c, py::handle buf_obj, int peer, int tag) {
  Buffer buf = asBuffer(buf_obj, "buf", Access::read);
  return c.run(keep({buf.array}), py::none(),
               [&](Communicator& comm) { return comm.send(buf.data, buf.count, buf.type, peer, tag); });
}

PyWork recvFrom(PyCommunicator& c, py::handle buf_obj, py::handle peer_obj, int tag) {
  Buffer buf = asBuffer(buf_obj, "buf", Access::write);
  const int peer = peer_obj.is_none() ? kAnySource : peer_obj.cast<int>();
  return c.run(keep({buf.array}), buf.array,
               [&](Communicator& comm) { return comm.recv(buf.data, buf.count, buf.type, peer, tag); });
}

}  // namespace

Communicator& PyCommunicator::get() {
  if (!comm_) throw Error(ErrorCode::InvalidArgument, "the communicator is closed");
  return *comm_;
}

void PyCommunicator::prune() {
  while (!pending_.empty() && pending_.front().first.test()) pending_.pop_front();
}

void PyCommunicator::close() {
  if (!comm_) return;
  {
    py::gil_scoped_release release;
    comm_.reset();  // waits for queued ops, bounded by their deadlines
  }
  pending_.clear();  // every op has completed or failed: the arrays may go
}

namespace {
// `with comm.group():` = group_start() ... group_end(); group_end is skipped when the body
// raised, so a half-issued group is not run (the communicator should be aborted then).
struct Group {
  py::object comm;
};
}  // namespace

void bindCommunicator(py::module_& m) {
  using namespace py::literals;
  py::class_<Group>(m, "_Group")
      .def("__enter__", [](Group& g) { g.comm.cast<PyCommunicator&>().get().groupStart(); })
      .def("__exit__", [](Group& g, py::object type, py::object, py::object) {
        if (!type.is_none()) return;
        Communicator& comm = g.comm.cast<PyCommunicator&>().get();
        py::gil_scoped_release release;
        comm.groupEnd();
      });
  py::class_<PyCommunicator>(m, "Communicator",
                             "A group of ranks that run collectives together (create one with coll.init()).\n\n"
                             "Ops are issued from one thread at a time; Works may be waited on from any thread.\n"
                             "Every op returns a coll.Work; ``work.result`` is the output array. See the\n"
                             "module docstring for each op's in-place and allocating forms.")
      .def_property_readonly("rank", [](PyCommunicator& c) { return c.get().rank(); })
      .def_property_readonly("size", [](PyCommunicator& c) { return c.get().size(); })
      .def_property_readonly("local_rank", [](PyCommunicator& c) { return c.get().localRank(); })
      .def_property_readonly("closed", &PyCommunicator::closed)
      .def("allreduce", &allreduce, "send"_a, "recv"_a = py::none(), "op"_a = "sum",
           "recv[i] = op over all ranks of send[i]. In place when recv is None or send.")
      .def("broadcast", &broadcast, "buf"_a, "root"_a = 0, "recv"_a = py::none(),
           "The root's buf to every rank: into buf (recv None) or into recv.")
      .def("reduce", &reduce, "send"_a, "recv"_a = py::none(), "op"_a = "sum", "root"_a = 0,
           "op over all ranks of send, on the root only (in send when recv is None). result is None elsewhere.")
      .def("allgather", &allgather, "send"_a, "recv"_a = py::none(),
           "Every rank's send, in rank order. recv None: a new array of shape (size, *send.shape).")
      .def("reduce_scatter", &reduceScatter, "send"_a, "recv"_a = py::none(), "op"_a = "sum",
           "Chunk `rank` of the reduction of every rank's send (size chunks). recv None: a new array.")
      .def("alltoall", &alltoall, "send"_a, "recv"_a = py::none(),
           "Chunk p of send goes to rank p; chunk p of recv comes from rank p. recv None: a new array.")
      .def("gather", &gather, "send"_a, "recv"_a = py::none(), "root"_a = 0,
           "Every rank's send on the root, in rank order. recv None: a new (size, *send.shape) array on the root.")
      .def("scatter", &scatter, "send"_a = py::none(), "recv"_a = py::none(), "root"_a = 0,
           "Chunk `rank` of the root's send. send is read on the root only; recv None: a new array.")
      .def("send", &sendTo, "buf"_a, "peer"_a, "tag"_a = 0,
           "Sends buf to peer; matched with peer's receives by tag, in issue order per tag.")
      .def("recv", &recvFrom, "buf"_a, "peer"_a = py::none(), "tag"_a = 0,
           "Receives into buf from peer (None: from anyone; Work.source says who), matched by tag.")
      .def("barrier", [](PyCommunicator& c) {
             return c.run(py::tuple(), py::none(), [](Communicator& comm) { return comm.barrier(); });
           }, "Completes once every rank has called it.")
      .def("group_start", [](PyCommunicator& c) { c.get().groupStart(); },
           "Holds back send/recv until group_end, which runs them as one op (see also group()).")
      .def("group_end", [](PyCommunicator& c) {
             Communicator& comm = c.get();
             py::gil_scoped_release release;
             comm.groupEnd();
           })
      .def("group", [](py::object self) { return Group{std::move(self)}; },
           "Context manager: ``with comm.group(): comm.send(a, 1); comm.recv(b, 1)``.")
      .def("abort", [](PyCommunicator& c) {
             Communicator& comm = c.get();
             py::gil_scoped_release release;
             comm.abort();
           },
           "Fails every queued and running op with PeerLost, closes every connection and returns once "
           "those ops have finished (their buffers may be freed). Idempotent.")
      .def("async_error", [](PyCommunicator& c) -> py::object {
             auto error = c.get().asyncError();
             return error ? makeError(*error) : py::none();
           },
           "The first coll.Error that broke the communicator (not raised), or None.")
      .def("set_algorithms", [](PyCommunicator& c, const std::string& rules) {
             Communicator& comm = c.get();
             py::gil_scoped_release release;  // waits for a running op
             comm.setAlgorithms(rules);
           }, "rules"_a,
           "COLL_ALGO's rules ('allreduce:0-64K:tree;allreduce:64K-inf:ring'; '' lets the selector decide) for "
           "the ops issued from now on. Every rank calls it at the same point, with none of its ops queued.")
      .def("describe", [](PyCommunicator& c) { return c.get().describe(); })
      .def("split", [](PyCommunicator& c, int color, py::object key) -> py::object {
             Communicator& comm = c.get();
             const int k = key.is_none() ? comm.rank() : key.cast<int>();
             std::unique_ptr<Communicator> part;
             {
               py::gil_scoped_release release;
               part = comm.split(color, k);
             }
             if (!part) return py::none();
             return py::cast(std::make_unique<PyCommunicator>(std::move(part)));
           }, "color"_a, "key"_a = py::none(),
           "As MPI_Comm_split: ranks with the same color (>= 0) form a new Communicator, ranked by key\n"
           "(default: this rank) then rank; color -1 (coll.SPLIT_NOCOLOR) joins none and gets None.")
      .def("shrink", [](PyCommunicator& c, py::object excluded) -> py::object {
             Communicator& comm = c.get();
             std::unique_ptr<Communicator> survivors;
             std::vector<int> listed;
             if (!excluded.is_none()) listed = excluded.cast<std::vector<int>>();
             {
               py::gil_scoped_release release;
               survivors = excluded.is_none() ? comm.shrink() : comm.shrink(listed);
             }
             return py::cast(std::make_unique<PyCommunicator>(std::move(survivors)));
           }, "excluded"_a = py::none(),
           "After a failure, a Communicator of the survivors. Without `excluded` (as MPIX_Comm_shrink) the\n"
           "survivors revoke this one and agree on who is alive; a rank that comes too late raises PeerLostError.\n"
           "With a list (as ncclCommShrink) every survivor names the same ranks.")
      .def("grow", [](PyCommunicator& c) {
             Communicator& comm = c.get();
             std::unique_ptr<Communicator> grown;
             {
               py::gil_scoped_release release;
               grown = comm.grow();
             }
             return std::make_unique<PyCommunicator>(std::move(grown));
           },
           "A Communicator of the members (ranks kept) and the processes waiting in coll.join() (ranks after\n"
           "them). Every member calls it; raises InvalidArgument on a failed communicator (shrink() first).")
      .def("failed_ranks", [](PyCommunicator& c) {
             Communicator& comm = c.get();
             py::gil_scoped_release release;
             return comm.failedRanks();
           },
           "The ranks known failed, sorted: the store saw their process end, or they did not answer after an op failed.")
      .def("agree", [](PyCommunicator& c, uint64_t value) {
             Communicator& comm = c.get();
             AgreeResult result;
             {
               py::gil_scoped_release release;
               result = comm.agree(value);
             }
             return py::make_tuple(result.value, result.failed_ranks);
           }, "value"_a = ~uint64_t{0},
           "As MPIX_Comm_agree: (the AND of the survivors' values, the failed ranks), the same on every rank that\n"
           "returns. Every surviving rank calls it; bounded by COLL_TIMEOUT * 1.5 (at least + 5 s).")
      .def("revoke", [](PyCommunicator& c) {
             Communicator& comm = c.get();
             py::gil_scoped_release release;
             comm.revoke();
           },
           "As MPIX_Comm_revoke: every pending and future op fails at once, on every rank. Then shrink().")
      .def("close", &PyCommunicator::close,
           "Waits for queued ops (bounded by their deadlines, without the GIL) and disconnects.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyCommunicator& c, py::args) { c.close(); })
      .def("__repr__", [](PyCommunicator& c) {
        if (c.closed()) return std::string("<coll.Communicator closed>");
        return "<coll.Communicator rank " + std::to_string(c.get().rank()) + " of " + std::to_string(c.get().size()) +
               ">";
      });
}

}  // namespace coll::python

// torch.save's .pt archives: the zip directory (pt_zip.cc), a pickle interpreter restricted to
// what torch.save writes for one tensor, and the view checks.
#include "core/pt.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "core/pt_zip.h"
#include "numprobe/error.h"

namespace numprobe {
namespace {

struct Value;
using Ref = std::shared_ptr<const Value>;

// A pickle value. Only what a tensor or state-dict pickle needs: containers are tuples/lists
// (items) and dicts (entries, for the names of a state dict's tensors), globals and persistent
// storages are named, tensors carry their view, and the other objects of a training checkpoint
// (argparse.Namespace, numpy RNG states, enums) are inert placeholders that only keep their class
// name: nothing is ever constructed or called.
struct Value {
  enum Kind {
    kNone,
    kBool,
    kInt,
    kFloat,
    kStr,
    kSeq,
    kDict,
    kGlobal,
    kStorage,
    kTensor,
    kMark,
    kObject
  };
  Kind kind = kNone;
  int64_t i = 0;           // kInt, kBool
  std::string s;           // kStr; kGlobal "module.name"; kStorage the record key
  std::vector<Ref> items;  // kSeq
  int depth = 0;  // nesting of kSeq/kDict; bounded so that destruction cannot recurse deeply
  DType dtype = DType::kUnknown;             // kStorage
  PtTensor tensor;                           // kTensor (storage_begin/bytes filled later)
  std::string storage_key;                   // kTensor
  std::vector<std::pair<Ref, Ref>> entries;  // kDict, in insertion order
  // How many memo slots hold this value: a container held only by the stack and the memo can be
  // changed in place (no other container sees it, so no cycle can form); otherwise it is copied.
  mutable size_t memo_refs = 0;
};

const char* kind_name(Value::Kind k) {
  static const char* const names[] = {"None", "bool",   "int",     "float",  "str",  "tuple/list",
                                      "dict", "global", "storage", "tensor", "mark", "object"};
  return names[k];
}

DType storage_dtype(const std::string& global) {
  static const std::map<std::string, DType> kTypes = {
      {"torch.DoubleStorage", DType::kF64}, {"torch.FloatStorage", DType::kF32},
      {"torch.HalfStorage", DType::kF16},   {"torch.BFloat16Storage", DType::kBF16},
      {"torch.LongStorage", DType::kI64},   {"torch.IntStorage", DType::kI32},
      {"torch.ShortStorage", DType::kI16},  {"torch.CharStorage", DType::kI8},
      {"torch.ByteStorage", DType::kU8},    {"torch.BoolStorage", DType::kBool},
  };
  auto it = kTypes.find(global);
  return it == kTypes.end() ? DType::kUnknown : it->second;
}

// Classes whose pickled instances are plain data in Megatron/DeepSpeed checkpoints: the argparse
// Namespace of the run's arguments, numpy arrays and dtypes of the RNG states, bytes (pickle
// protocol 2 spells them _codecs.encode), sets, torch devices and sizes, and the enums of
// Megatron/MindSpeed (module megatron.* / mindspeed.*, called with their value).
bool is_inert_class(const std::string& f) {
  static const char* const kInert[] = {
      "argparse.Namespace",
      "numpy.core.multiarray._reconstruct",
      "numpy._core.multiarray._reconstruct",
      "numpy.ndarray",
      "numpy.dtype",
      "numpy.core.multiarray.scalar",
      "numpy._core.multiarray.scalar",
      "_codecs.encode",
      "builtins.set",
      "builtins.frozenset",
      "builtins.slice",
      "builtins.complex",
      "__builtin__.set",
      "__builtin__.frozenset",
      "_io.BytesIO",
      "torch.device",
      "torch.Size",
  };
  for (const char* k : kInert)
    if (f == k) return true;
  for (const char* module : {"megatron.", "mindspeed."})
    if (f.rfind(module, 0) == 0 && f.find("enums.") != std::string::npos) return true;
  return false;
}

class Unpickler {
 public:
  Unpickler(const uint8_t* p, size_t n, const std::string& file) : p_(p), n_(n), file_(file) {}

  Ref run() {
    while (true) {
      const size_t op_at = at_;
      const uint8_t op = byte();
      switch (op) {
        case 0x80:
          byte();
          break;  // PROTO
        case 0x95:
          bytes(8);
          break;     // FRAME: a length hint
        case '.': {  // STOP
          Ref v = pop(op_at);
          return v;
        }
        case '(':
          push(make(Value::kMark));
          break;
        case 'N':
          push(make(Value::kNone));
          break;
        case 0x88:
        case 0x89: {  // NEWTRUE, NEWFALSE
          auto v = std::make_shared<Value>();
          v->kind = Value::kBool;
          v->i = op == 0x88;
          push(v);
          break;
        }
        case 'K':
          push_int(static_cast<int64_t>(le(1)));
          break;  // BININT1
        case 'M':
          push_int(static_cast<int64_t>(le(2)));
          break;  // BININT2
        case 'J':
          push_int(static_cast<int32_t>(le(4)));
          break;      // BININT
        case 0x8a: {  // LONG1: little-endian two's complement of n bytes
          const size_t len = byte();
          if (len > 8) fail("integer wider than 64 bits", op_at);
          uint64_t u = le(static_cast<int>(len));
          if (len > 0 && len < 8 && (u >> (8 * len - 1)) & 1) u |= ~uint64_t{0} << (8 * len);
          push_int(static_cast<int64_t>(u));
          break;
        }
        case 'G': {  // BINFLOAT: big-endian double
          uint64_t u = 0;
          const uint8_t* b = bytes(8);
          for (int k = 0; k < 8; ++k) u = (u << 8) | b[k];
          auto v = std::make_shared<Value>();
          v->kind = Value::kFloat;
          memcpy(&v->i, &u, 8);
          push(v);
          break;
        }
        case 'X':
          push_str(le(4));
          break;  // BINUNICODE
        case 0x8c:
          push_str(le(1));
          break;  // SHORT_BINUNICODE
        case 0x8d:
          push_str(le(8));
          break;  // BINUNICODE8
        case 'T':
          push_str(le(4));
          break;  // BINSTRING
        case 'U':
          push_str(le(1));
          break;  // SHORT_BINSTRING
        case 'B':
          push_str(le(4));
          break;  // BINBYTES
        case 'C':
          push_str(le(1));
          break;     // SHORT_BINBYTES
        case 'c': {  // GLOBAL "module\nname\n"
          std::string module = line(op_at), name = line(op_at);
          push_global(module + "." + name);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          Ref name = pop(op_at), module = pop(op_at);
          if (module->kind != Value::kStr || name->kind != Value::kStr)
            fail("STACK_GLOBAL needs two strings", op_at);
          push_global(module->s + "." + name->s);
          break;
        }
        case ')':
          push(make(Value::kSeq));
          break;  // EMPTY_TUPLE
        case ']':
          push(make(Value::kSeq));
          break;  // EMPTY_LIST
        case '}':
          push(make(Value::kDict));
          break;  // EMPTY_DICT
        case 't':
        case 'l':
          push(seq(pop_mark(op_at), op_at));
          break;     // TUPLE, LIST
        case 'd': {  // DICT
          std::vector<Ref> items = pop_mark(op_at);
          push(make(Value::kDict));
          set_items(op_at, std::move(items));
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          std::vector<Ref> items(static_cast<size_t>(op - 0x84));
          for (size_t k = items.size(); k-- > 0;) items[k] = pop(op_at);
          push(seq(std::move(items), op_at));
          break;
        }
        case 'a': {  // APPEND
          Ref v = pop(op_at);
          append(op_at, {v});
          break;
        }
        case 'e':
          append(op_at, pop_mark(op_at));
          break;     // APPENDS
        case 's': {  // SETITEM
          Ref v = pop(op_at), k = pop(op_at);
          set_items(op_at, {k, v});
          break;
        }
        case 'u':
          set_items(op_at, pop_mark(op_at));
          break;  // SETITEMS
        case 'b':
          pop(op_at);
          top(op_at);
          break;  // BUILD: the state of a rebuilt object, unused
        case 'q':
          put_memo(le(1), op_at);
          break;  // BINPUT
        case 'r':
          put_memo(le(4), op_at);
          break;  // LONG_BINPUT
        case 0x94:
          put_memo(memo_.size(), op_at);
          break;  // MEMOIZE
        case 'h':
          push(memo(le(1), op_at));
          break;  // BINGET
        case 'j':
          push(memo(le(4), op_at));
          break;  // LONG_BINGET
        case 'Q':
          push(persistent(pop(op_at), op_at));
          break;     // BINPERSID
        case 'R': {  // REDUCE
          Ref args = pop(op_at), callable = pop(op_at);
          push(reduce(*callable, *args, op_at));
          break;
        }
        case 0x81: {  // NEWOBJ: cls.__new__(cls, *args), e.g. argparse.Namespace
          Ref args = pop(op_at), cls = pop(op_at);
          push(placeholder(*cls, op_at));
          break;
        }
        case 0x92: {  // NEWOBJ_EX
          pop(op_at);
          Ref args = pop(op_at), cls = pop(op_at);
          push(placeholder(*cls, op_at));
          break;
        }
        default:
          fail("unsupported pickle opcode 0x" + hex(op) + " (not written by torch.save)", op_at);
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what, size_t at) const {
    throw InputError(file_, "data.pkl: " + what, static_cast<int64_t>(at));
  }
  static std::string hex(uint8_t b) {
    const char* d = "0123456789abcdef";
    return {d[b >> 4], d[b & 15]};
  }
  const uint8_t* bytes(size_t k) {
    if (k > n_ - at_) fail("truncated pickle", at_);
    const uint8_t* b = p_ + at_;
    at_ += k;
    return b;
  }
  uint8_t byte() { return *bytes(1); }
  uint64_t le(int k) {
    const uint8_t* b = bytes(static_cast<size_t>(k));
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }
  std::string line(size_t op_at) {
    const size_t start = at_;
    while (at_ < n_ && p_[at_] != '\n') ++at_;
    if (at_ >= n_) fail("unterminated GLOBAL", op_at);
    return std::string(reinterpret_cast<const char*>(p_ + start), at_++ - start);
  }
  static std::shared_ptr<Value> make(Value::Kind k) {
    auto v = std::make_shared<Value>();
    v->kind = k;
    return v;
  }
  Ref seq(std::vector<Ref> items, size_t op_at) const {
    auto v = make(Value::kSeq);
    for (const Ref& r : items) v->depth = std::max(v->depth, r->depth + 1);
    if (v->depth > kMaxDepth)
      fail("containers nested deeper than " + std::to_string(kMaxDepth), op_at);
    v->items = std::move(items);
    return v;
  }
  void push(Ref v) { stack_.push_back(std::move(v)); }
  void push_int(int64_t i) {
    auto v = make(Value::kInt);
    v->i = i;
    push(v);
  }
  void push_str(uint64_t len) {
    if (len > n_ - at_) fail("string runs past the pickle", at_);
    auto v = make(Value::kStr);
    const uint8_t* b = bytes(static_cast<size_t>(len));
    v->s.assign(reinterpret_cast<const char*>(b), static_cast<size_t>(len));
    push(v);
  }
  void push_global(std::string name) {
    auto v = make(Value::kGlobal);
    v->s = std::move(name);
    push(v);
  }
  Ref pop(size_t op_at) {
    if (stack_.empty() || stack_.back()->kind == Value::kMark) fail("stack underflow", op_at);
    Ref v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  const Ref& top(size_t op_at) {
    if (stack_.empty() || stack_.back()->kind == Value::kMark) fail("stack underflow", op_at);
    return stack_.back();
  }
  void expect_top(Value::Kind k, size_t op_at) {
    if (top(op_at)->kind != k)
      fail(std::string("expected a ") + kind_name(k) + " on the stack", op_at);
  }
  std::vector<Ref> pop_mark(size_t op_at) {
    size_t m = stack_.size();
    while (m > 0 && stack_[m - 1]->kind != Value::kMark) --m;
    if (m == 0) fail("no MARK on the stack", op_at);
    std::vector<Ref> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m - 1);
    return items;
  }
  void append(size_t op_at, std::vector<Ref> items) {
    expect_top(Value::kSeq, op_at);
    Value& list = writable_top(op_at, items.size());
    for (Ref& r : items) {
      list.depth = std::max(list.depth, r->depth + 1);
      list.items.push_back(std::move(r));
    }
    if (list.depth > kMaxDepth)
      fail("containers nested deeper than " + std::to_string(kMaxDepth), op_at);
  }
  // items: key, value, key, value, ... added to the dict on top of the stack.
  void set_items(size_t op_at, std::vector<Ref> items) {
    expect_top(Value::kDict, op_at);
    if (items.size() % 2 != 0) fail("a dict item without a value", op_at);
    Value& dict = writable_top(op_at, items.size() / 2);
    for (size_t k = 0; k < items.size(); k += 2) {
      dict.depth = std::max({dict.depth, items[k]->depth + 1, items[k + 1]->depth + 1});
      dict.entries.emplace_back(std::move(items[k]), std::move(items[k + 1]));
    }
    if (dict.depth > kMaxDepth)
      fail("containers nested deeper than " + std::to_string(kMaxDepth), op_at);
  }
  // The container on top of the stack, ready to grow by `added` items. Only the stack and the memo
  // hold it: changed in place. Otherwise (another container holds it too) a copy replaces it on
  // the stack and in the memo, so that the other holder cannot come to contain itself; the copies
  // are budgeted so that a hostile file cannot take quadratic time.
  Value& writable_top(size_t op_at, size_t added) {
    if (static_cast<size_t>(stack_.back().use_count()) != 1 + stack_.back()->memo_refs) {
      const Ref old = stack_.back();
      copies_ += old->items.size() + old->entries.size() + added + memo_.size();
      if (copies_ > kMaxCopies) fail("too many container items for a checkpoint pickle", op_at);
      auto copy = std::make_shared<Value>(*old);
      copy->memo_refs = 0;
      for (auto& slot : memo_)
        if (slot.second == old) {
          slot.second = copy;
          --old->memo_refs;
          ++copy->memo_refs;
        }
      stack_.back() = copy;
    }
    // Created by make_shared<Value> (never const), shared with nothing but the memo.
    return const_cast<Value&>(*stack_.back());
  }
  void put_memo(uint64_t key, size_t op_at) {
    const Ref& v = top(op_at);
    Ref& slot = memo_[key];
    if (slot) --slot->memo_refs;
    slot = v;
    ++v->memo_refs;
  }

  Ref memo(uint64_t key, size_t op_at) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo key " + std::to_string(key) + " was never stored", op_at);
    return it->second;
  }

  // ('storage', storage type, key, location, numel)
  Ref persistent(const Ref& pid, size_t op_at) {
    const auto& it = pid->items;
    if (pid->kind != Value::kSeq || it.size() < 5 || it[0]->kind != Value::kStr ||
        it[0]->s != "storage" || it[1]->kind != Value::kGlobal || it[2]->kind != Value::kStr)
      fail("persistent id is not a torch storage reference", op_at);
    auto v = make(Value::kStorage);
    v->dtype = storage_dtype(it[1]->s);
    if (v->dtype == DType::kUnknown) fail("unsupported storage type " + it[1]->s, op_at);
    v->s = it[2]->s;
    return v;
  }

  std::vector<int64_t> ints(const Ref& v, const char* what, size_t op_at) {
    if (v->kind != Value::kSeq) fail(std::string(what) + " is not a tuple", op_at);
    std::vector<int64_t> out;
    for (const Ref& x : v->items) {
      if (x->kind != Value::kInt || x->i < 0) fail(std::string(what) + " holds a non-size", op_at);
      out.push_back(x->i);
    }
    return out;
  }

  Ref reduce(const Value& callable, const Value& args, size_t op_at) {
    if (callable.kind != Value::kGlobal) fail("REDUCE of a non-global", op_at);
    if (args.kind != Value::kSeq) fail("REDUCE arguments are not a tuple", op_at);
    const std::string& f = callable.s;
    const auto& a = args.items;
    // A dict subclass's items follow as SETITEMS; defaultdict's factory is never called.
    if (f == "collections.OrderedDict" || f == "collections.defaultdict") return make(Value::kDict);
    if (f == "torch._utils._rebuild_tensor_v2" || f == "torch._utils._rebuild_tensor") {
      if (a.size() < 4 || a[0]->kind != Value::kStorage || a[1]->kind != Value::kInt)
        fail(f + ": unexpected arguments", op_at);
      auto t = make(Value::kTensor);
      t->tensor.dtype = a[0]->dtype;
      t->storage_key = a[0]->s;
      t->tensor.storage_offset = a[1]->i;
      if (t->tensor.storage_offset < 0) fail("negative storage offset", op_at);
      t->tensor.shape = ints(a[2], "shape", op_at);
      t->tensor.stride = ints(a[3], "stride", op_at);
      if (t->tensor.shape.size() != t->tensor.stride.size())
        fail("shape and stride have different ranks", op_at);
      return t;
    }
    if (f == "torch._utils._rebuild_parameter" ||
        f == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || a[0]->kind != Value::kTensor) fail(f + ": no tensor argument", op_at);
      return a[0];
    }
    if (f == "torch._tensor._rebuild_from_type_v2" || f == "torch._tensor._rebuild_from_type") {
      if (a.size() < 3 || a[0]->kind != Value::kGlobal) fail(f + ": unexpected arguments", op_at);
      return reduce(*a[0], *a[2], op_at);
    }
    return placeholder(callable, op_at);
  }

  // The objects a training checkpoint holds besides tensors, kept by class name only (never
  // constructed): anything else is refused, as torch.load(weights_only=True) would.
  Ref placeholder(const Value& cls, size_t op_at) {
    if (cls.kind != Value::kGlobal) fail("object of a non-global class", op_at);
    if (!is_inert_class(cls.s))
      fail(
          "unsupported object " + cls.s + " (numprobe reads tensors only and runs no pickled code)",
          op_at);
    auto v = make(Value::kObject);
    v->s = cls.s;
    return v;
  }

  static constexpr int kMaxDepth = 32;
  static constexpr size_t kMaxCopies = size_t{1} << 20;
  size_t copies_ = 0;
  const uint8_t* p_;
  size_t n_;
  size_t at_ = 0;
  const std::string& file_;
  std::vector<Ref> stack_;
  std::map<uint64_t, Ref> memo_;
};

bool is_row_major(const PtTensor& t) {
  int64_t expect = 1;
  for (size_t d = t.shape.size(); d-- > 0;) {
    if (t.shape[d] != 1 && t.stride[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

// The archive's records by name, its pickle's prefix ("archive/") and the unpickled root object.
struct PtArchiveRoot {
  std::map<std::string, const pt::ZipRecord*> records;
  std::string prefix;
  Ref root;
  size_t pickle_bytes = 0;
};

PtArchiveRoot read_archive(const std::vector<pt::ZipRecord>& records, const uint8_t* buf,
                           const std::string& name) {
  PtArchiveRoot a;
  const pt::ZipRecord* pkl = nullptr;
  for (const auto& r : records) {
    a.records.emplace(r.name, &r);
    const std::string suffix = "data.pkl";
    if (!pkl && r.name.size() >= suffix.size() &&
        r.name.compare(r.name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        (r.name.size() == suffix.size() || r.name[r.name.size() - suffix.size() - 1] == '/'))
      pkl = &r;
  }
  if (!pkl) throw InputError(name, "no data.pkl record: not a torch.save archive");
  a.prefix = pkl->name.substr(0, pkl->name.size() - 8);
  auto bo = a.records.find(a.prefix + "byteorder");
  if (bo != a.records.end()) {
    const std::string order(reinterpret_cast<const char*>(buf + bo->second->data_begin),
                            bo->second->size);
    if (order != "little")
      throw InputError(name, "byteorder '" + order + "': only little-endian tensors are supported");
  }
  a.root = Unpickler(buf + pkl->data_begin, pkl->size, name).run();
  a.pickle_bytes = pkl->size;
  return a;
}

// The tensor's storage located and its view checked against it.
PtTensor resolve_tensor(const PtArchiveRoot& a, const Value& v, const std::string& name) {
  PtTensor t = v.tensor;
  auto rec = a.records.find(a.prefix + "data/" + v.storage_key);
  if (rec == a.records.end())
    throw InputError(name, "storage record '" + a.prefix + "data/" + v.storage_key + "' missing");
  const pt::ZipRecord* st = rec->second;
  t.storage_begin = st->data_begin;
  t.storage_bytes = st->size;
  const size_t item = dtype_size(t.dtype);
  const size_t storage_elems = st->size / item;
  // The last element the view reaches; every dim >= 0 and no size 0 means all of it is reached.
  size_t count = 1, last = static_cast<size_t>(t.storage_offset);
  bool empty = false;
  for (size_t d = 0; d < t.shape.size(); ++d) {
    const auto s = static_cast<uint64_t>(t.shape[d]);
    if (s == 0) empty = true;
    if (s != 0 && count > SIZE_MAX / s) throw InputError(name, "shape overflows");
    count *= static_cast<size_t>(s);
    if (s > 0) {
      const auto stride = static_cast<uint64_t>(t.stride[d]);
      if (s - 1 != 0 && stride > (SIZE_MAX - last) / (s - 1))
        throw InputError(name, "strides overflow");
      last += static_cast<size_t>((s - 1) * stride);
    }
  }
  if (count > SIZE_MAX / item) throw InputError(name, "shape overflows");
  t.element_count = empty ? 0 : count;
  if (!empty && last >= storage_elems)
    throw InputError(name, "the tensor view reaches element " + std::to_string(last) +
                               " of a storage holding " + std::to_string(storage_elems));
  t.contiguous = is_row_major(t);
  return t;
}

// Depth-first over dicts (and the dicts in lists and tuples, by index): every tensor with its
// dotted key path, every placeholder object with its path and class.
// visits: what is left of the walk's budget. Every reference in the pickle costs it at least a
// byte, but a container shared through the memo is walked once per reference: a few bytes can nest
// shared lists 32 deep into 2^32 visits, so the walk stops at a few visits per pickle byte.
void collect(const PtArchiveRoot& a, const Ref& v, const std::string& path, const std::string& name,
             PtStateDict* out, size_t* visits) {
  if ((*visits)-- == 0)
    throw InputError(name, "data.pkl: shared containers expand to too many objects");
  auto join = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  switch (v->kind) {
    case Value::kTensor:
      out->tensors.push_back({path, resolve_tensor(a, *v, name)});
      break;
    case Value::kObject:
      out->placeholders.push_back({path, v->s});
      break;
    case Value::kDict:
      for (const auto& [k, item] : v->entries) {
        if (k->kind == Value::kStr)
          collect(a, item, join(k->s), name, out, visits);
        else if (k->kind == Value::kInt)
          collect(a, item, join(std::to_string(k->i)), name, out, visits);
      }
      break;
    case Value::kSeq:
      for (size_t i = 0; i < v->items.size(); ++i)
        collect(a, v->items[i], join(std::to_string(i)), name, out, visits);
      break;
    default:
      break;
  }
}

}  // namespace

PtTensor parse_pt(const uint8_t* buf, size_t len, const std::string& name) {
  const std::vector<pt::ZipRecord> records = pt::read_zip_directory(buf, len, name);
  const PtArchiveRoot a = read_archive(records, buf, name);
  if (a.root->kind != Value::kTensor)
    throw InputError(
        name, std::string("the saved object is a ") + kind_name(a.root->kind) + ", not a tensor");
  return resolve_tensor(a, *a.root, name);
}

PtStateDict parse_pt_state_dict(const uint8_t* buf, size_t len, const std::string& name) {
  const std::vector<pt::ZipRecord> records = pt::read_zip_directory(buf, len, name);
  const PtArchiveRoot a = read_archive(records, buf, name);
  PtStateDict out;
  size_t visits = 4 * a.pickle_bytes + 1024;
  collect(a, a.root, "", name, &out, &visits);
  return out;
}

void copy_pt_elements(const uint8_t* buf, const PtTensor& t, void* out) {
  const size_t item = dtype_size(t.dtype);
  const uint8_t* base = buf + t.storage_begin + static_cast<size_t>(t.storage_offset) * item;
  auto* dst = static_cast<uint8_t*>(out);
  if (t.element_count == 0) return;
  if (t.contiguous) {
    memcpy(dst, base, t.element_count * item);
    return;
  }
  // Odometer over the index space in row-major order.
  const size_t rank = t.shape.size();
  std::vector<int64_t> idx(rank, 0);
  size_t src = 0;
  for (size_t k = 0; k < t.element_count; ++k) {
    memcpy(dst + k * item, base + src * item, item);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < t.shape[d]) {
        src += static_cast<size_t>(t.stride[d]);
        break;
      }
      src -= static_cast<size_t>(t.stride[d] * (t.shape[d] - 1));
      idx[d] = 0;
    }
  }
}

}  // namespace numprobe

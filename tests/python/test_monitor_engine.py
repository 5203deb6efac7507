"""The monitor engine's files read by their second readers: TensorBoard's own EventAccumulator reads
numprobe's event file, Google's protobuf runtime parses its records (python3-protobuf), and a
plain-Python TFRecord parse checks the framing and CRCs, pandas
reads the CSVs to the values the sink was given, and msprobe's anomaly analyser orders numprobe's
anomaly.json files as `numprobe monitor-analyse` does.

The files come from tests/tools/monitor_write_sample (the real MetricSink; see its header for the
series it writes)."""
import json
import os
import pathlib
import struct
import subprocess
import sys

import pytest

from conftest import BUILD, CLI, live

SAMPLE = BUILD / "bin" / "monitor_write_sample"


def write_sample(base, fmt, rank, hostile=False):
    if not SAMPLE.exists():
        pytest.fail(f"{SAMPLE} not built: run `make build` first")
    args = [str(SAMPLE), str(base), fmt, str(rank)] + (["hostile"] if hostile else [])
    return pathlib.Path(subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip())


# --- plain parsing: TFRecord framing with masked CRC-32C and the few protobuf fields -------------

def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            raise AssertionError(f"wire type {wt}")
        yield num, wt, v


def plain_events(path):
    data = path.read_bytes()
    i, out, version = 0, [], None
    while i < len(data):
        header = data[i:i + 8]
        (n,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[i + 8:i + 12])[0] == masked(header)
        body = data[i + 12:i + 12 + n]
        assert struct.unpack("<I", data[i + 12 + n:i + 16 + n])[0] == masked(body)
        i += 16 + n
        step = 0
        for num, _, v in fields(body):
            if num == 2:
                step = v
            elif num == 3:
                version = v.decode()
            elif num == 5:
                for _, _, value in fields(v):
                    f = {k: x for k, _, x in fields(value)}
                    out.append((f[1].decode(), step, struct.unpack("<f", f[2])[0]))
    return version, out


def test_event_file_plain_parse(tmp_path):
    run = write_sample(tmp_path, "tensorboard", 0)
    (ev,) = run.glob("events.out.tfevents.*")
    version, scalars = plain_events(ev)
    assert version == "brain.Event:2"
    norms = [(s, v) for t, s, v in scalars if t == "0:fc1.weight/rank0/post_grad_norm"]
    assert [s for s, _ in norms] == list(range(10))
    assert norms[6][1] == pytest.approx(9.0)
    assert any(t == "0:fc2.input:0/rank0/actv_max" for t, _, _ in scalars)


def protobuf_event_class():
    """TensorBoard's Event and Summary messages (tensorflow/core/util/event.proto, summary.proto:
    the fields the monitor writes) built at run time for Google's protobuf runtime, which then
    parses numprobe's records as any protobuf reader would."""
    descriptor_pb2 = live("google.protobuf.descriptor_pb2")
    descriptor_pool = live("google.protobuf.descriptor_pool")
    message_factory = live("google.protobuf.message_factory")
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="numprobe_test_event.proto", package="nptest")

    def message(name, fields):
        m = fdp.message_type.add(name=name)
        for fname, number, ftype, label, type_name in fields:
            f = m.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = type_name

    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message("Value", [("tag", 1, F.TYPE_STRING, opt, None), ("simple_value", 2, F.TYPE_FLOAT, opt, None)])
    message("Summary", [("value", 1, F.TYPE_MESSAGE, rep, ".nptest.Value")])
    message("Event", [("wall_time", 1, F.TYPE_DOUBLE, opt, None), ("step", 2, F.TYPE_INT64, opt, None),
                      ("file_version", 3, F.TYPE_STRING, opt, None),
                      ("summary", 5, F.TYPE_MESSAGE, opt, ".nptest.Summary")])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    desc = pool.FindMessageTypeByName("nptest.Event")
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def test_event_file_read_by_google_protobuf(tmp_path):
    Event = protobuf_event_class()
    run = write_sample(tmp_path, "tensorboard", 0)
    (ev,) = run.glob("events.out.tfevents.*")
    data, i, events = ev.read_bytes(), 0, []
    while i < len(data):
        (n,) = struct.unpack("<Q", data[i:i + 8])
        e = Event()
        e.ParseFromString(data[i + 12:i + 12 + n])
        events.append(e)
        i += 16 + n
    assert events[0].file_version == "brain.Event:2" and events[0].wall_time > 1.7e9
    norms = [(e.step, v.simple_value) for e in events for v in e.summary.value
             if v.tag == "0:fc1.weight/rank0/post_grad_norm"]
    assert [s for s, _ in norms] == list(range(10))
    assert norms[6][1] == pytest.approx(9.0)


def test_event_file_tensorboard_reader(tmp_path):
    ea_mod = live("tensorboard.backend.event_processing.event_accumulator")
    run = write_sample(tmp_path, "tensorboard", 1)
    acc = ea_mod.EventAccumulator(str(run), size_guidance={ea_mod.SCALARS: 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]
    assert "0:fc1.weight/rank1/post_grad_norm" in tags
    events = acc.Scalars("0:fc1.weight/rank1/post_grad_norm")
    assert [e.step for e in events] == list(range(10))
    assert events[6].value == pytest.approx(9.0 * 1.1)
    assert events[0].value == pytest.approx(1.1)


def test_csv_read_by_pandas(tmp_path):
    pd = live("pandas")
    run = write_sample(tmp_path, "csv", 0)
    df = pd.read_csv(run / "grad_reduced_5-9.csv")
    assert list(df.columns) == ["vpp_stage", "name", "step", "norm", "max", "mean"]
    fc1 = df[df["name"] == "fc1.weight"]
    assert list(fc1["step"]) == [5, 6, 7, 8, 9]
    assert list(fc1["norm"]) == [1.05, 9.0, 1.07, 1.08, 1.09]
    actv = pd.read_csv(run / "actv_5-9.csv")
    assert list(actv.columns)[:4] == ["vpp_stage", "name", "step", "micro_step"]
    assert actv["max"].isna().sum() == 1


def order_key(rec):
    # msprobe's GradAnomalyData order without the rank (msprobe leaves rank ties in listdir order).
    stage = {"actv": 0, "actv_grad": 1, "pre_grad": 1, "post_grad": 1, "acc_grad": 1,
             "exp_avg": 2, "exp_avg_sq": 2}.get(rec["tag_name"].split("/")[-1], -1)
    d = 1 if stage == 0 else -1
    return (rec["step"], rec["micro_step"], stage, d * rec["vpp_stage"], d * rec["pp_stage"], rec["call_id"])


def test_msprobe_analyser_orders_like_monitor_analyse(tmp_path, cli):
    live("msprobe")
    base = tmp_path / "mon"
    for rank in (0, 1, 2):
        write_sample(base, "csv", rank)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    out = cli("monitor-analyse", base, "-k", "100", "-o", ours).stdout
    assert "step 6" in out
    p = subprocess.run([sys.executable, "-m", "msprobe.core.monitor.anomaly_processor",
                        "-d", str(base / "anomaly_detected"), "-o", str(theirs), "-k", "100"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    a = json.loads((ours / "anomaly_analyse.json").read_text())
    b = json.loads((theirs / "anomaly_analyse.json").read_text())
    assert len(a) == 6
    assert a == b  # same records, same values
    assert [order_key(r) for r in a.values()] == [order_key(r) for r in b.values()]
    assert [order_key(r) for r in a.values()] == sorted(order_key(r) for r in a.values())
    # Rank breaks numprobe's ties.
    ties = [r["rank"] for r in a.values() if r["step"] == 6]
    assert ties == sorted(ties)


def test_monitor_analyse_exit_codes(tmp_path, cli):
    p = cli("monitor-analyse", tmp_path, check=False)
    assert p.returncode != 0
    assert "no anomaly files found" in p.stderr
    (tmp_path / "anomaly_detected" / "rank0").mkdir(parents=True)
    (tmp_path / "anomaly_detected" / "rank0" / "anomaly.json").write_text("{}")
    p = cli("monitor-analyse", tmp_path)
    assert "no anomaly" in p.stdout
    (tmp_path / "anomaly_detected" / "rank0" / "anomaly.json").write_text("{bad")
    p = cli("monitor-analyse", tmp_path, check=False)
    assert p.returncode != 0 and "rank0/anomaly.json" in p.stderr


def test_monitor_report_cli(tmp_path, cli):
    base = tmp_path / "mon"
    write_sample(base, "csv", 0, hostile=True)
    write_sample(base, "tensorboard", 1)
    out = cli("monitor-report", base, "-o", tmp_path / "r.html").stdout
    assert "2 run(s), 2 rank(s)" in out
    html = (tmp_path / "r.html").read_text()
    assert "<img" not in html
    assert "fc1.weight" in html
    p = cli("monitor-report", tmp_path / "nothing", "-o", tmp_path / "x.html", check=False)
    assert p.returncode != 0 and not (tmp_path / "x.html").exists()

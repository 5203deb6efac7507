"""Writes a compare's tables: `result.xlsx` (sheet `summary`, then one sheet per check) and the same
tables as `<check>.csv`, each file written to a temporary name and renamed."""
import csv
import os

SUMMARY_HEADER = ["filename", "pass_check", "rows", "note"]


def _cell(value):
    return "" if value is None else value


def _tables(results):
    yield "summary", SUMMARY_HEADER, [[r.name, r.status, len(r.rows), r.note] for r in results]
    for r in results:
        if r.status != "skipped":
            yield r.name, r.header, r.rows


def _write_csv(path, header, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows([[_cell(v) for v in row] for row in rows])
    os.replace(tmp, path)


def _write_xlsx(path, tables):
    import openpyxl
    from openpyxl.styles import Font, PatternFill

    red = PatternFill("solid", fgColor="FFC7CE")
    yellow = PatternFill("solid", fgColor="FFEB9C")
    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for name, header, rows in tables:
        ws = wb.create_sheet(name[:31])
        ws.append(header)
        for cell in ws[1]:
            cell.font = Font(bold=True)
        for row in rows:
            ws.append([_cell(v) if not isinstance(v, (list, dict)) else str(v) for v in row])
            marks = {str(v) for v in row}
            fill = red if marks & {"error", "False"} else yellow if "warning" in marks else None
            if fill:
                for cell in ws[ws.max_row]:
                    cell.fill = fill
        ws.freeze_panes = "A2"
    tmp = path + ".tmp"
    wb.save(tmp)
    os.replace(tmp, path)


def write(results, out_dir):
    """Returns the files written; result.xlsx is left out (with a note) when openpyxl is missing."""
    os.makedirs(out_dir, exist_ok=True)
    tables = list(_tables(results))
    written = []
    for r in results:  # a table of an earlier compare into this folder must not linger
        stale = os.path.join(out_dir, f"{r.name}.csv")
        if r.status == "skipped" and os.path.exists(stale):
            os.unlink(stale)
    for name, header, rows in tables:
        path = os.path.join(out_dir, f"{name}.csv")
        _write_csv(path, header, rows)
        written.append(path)
    try:
        import openpyxl  # noqa: F401
    except ImportError:
        return written, "result.xlsx not written: openpyxl is not installed (the CSV files hold it all)"
    path = os.path.join(out_dir, "result.xlsx")
    _write_xlsx(path, tables)
    return [path] + written, ""

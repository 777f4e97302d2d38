"""Parquet fixtures for the C++ tests, written and read with pyarrow (the independent reference).

  parquet_fixtures.py write OUT.parquet DOCS.json [--row-group-size N] [--checksum] [--compression C]
      DOCS.json: a list of texts (a null for a null row); columns `id` (int64) and `text` (string).
  parquet_fixtures.py write-int OUT.parquet      a file whose `text` column holds integers
  parquet_fixtures.py write-forged OUT.parquet   about 1.5 MiB of text in one snappy page whose header
      claims ~128 MiB uncompressed (the footer keeps the true size): a forged page header
  parquet_fixtures.py dump DIR OUT.json
      For every *.parquet in DIR and every top-level string/binary column: the values pyarrow reads
      (hex, null for a null) with page CRCs checked, or the error pyarrow gives.
"""
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
from pathlib import Path


def write(out, docs_path, args):
    texts = json.loads(Path(docs_path).read_text(encoding="utf-8"))
    row_group_size = None
    checksum = "--checksum" in args
    compression = "snappy"
    if "--row-group-size" in args:
        row_group_size = int(args[args.index("--row-group-size") + 1])
    if "--compression" in args:
        compression = args[args.index("--compression") + 1]
    table = pa.table({"id": pa.array(range(len(texts)), pa.int64()), "text": pa.array(texts, pa.string())})
    pq.write_table(table, out, row_group_size=row_group_size, write_page_checksum=checksum,
                   compression=compression)


def read_varint(data, at):
    value, shift = 0, 0
    while True:
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if not byte & 0x80:
            return value, at
        shift += 7


def write_forged(out):
    texts = [("%05d " % i) + "words of a forged page " * 700 for i in range(96)]
    pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), out, compression="snappy",
                   use_dictionary=False, data_page_version="1.0", data_page_size=1 << 24)
    data = bytearray(Path(out).read_bytes())
    at = pq.ParquetFile(out).metadata.row_group(0).column(0).data_page_offset
    # PageHeader in Thrift's compact protocol: field 1 (i32 type: 0x15, zigzag varint), then field 2
    # (i32 uncompressed_page_size: 0x15, zigzag varint). The size is rewritten as the largest value
    # its varint's length can hold, so that no offset in the file moves.
    assert data[at] == 0x15, "expected the page type field"
    _, at = read_varint(data, at + 1)
    assert data[at] == 0x15, "expected the uncompressed size field"
    zigzag, end = read_varint(data, at + 1)
    length = end - (at + 1)
    assert length == 4, f"expected a 4-byte size (got {length}: size {zigzag >> 1})"
    forged = ((1 << (7 * length)) - 2)  # zigzag of the largest positive value that fits
    for i in range(length):
        data[at + 1 + i] = ((forged >> (7 * i)) & 0x7F) | (0x80 if i < length - 1 else 0)
    Path(out).write_bytes(bytes(data))


def dump(folder, out):
    result = []
    for path in sorted(Path(folder).glob("*.parquet")):
        try:
            schema = pq.read_schema(path)
        except Exception as e:  # noqa: BLE001 - any unreadable file is recorded as such
            result.append({"file": path.name, "column": None, "error": str(e)})
            continue
        for field in schema:
            if not (pa.types.is_string(field.type) or pa.types.is_binary(field.type)
                    or pa.types.is_large_string(field.type) or pa.types.is_large_binary(field.type)):
                continue
            entry = {"file": path.name, "column": field.name}
            try:
                column = pq.read_table(path, columns=[field.name], page_checksum_verification=True).column(0)
                values = column.to_pylist()
                entry["values"] = [None if v is None else (v.encode("utf-8") if isinstance(v, str) else v).hex()
                                   for v in values]
            except Exception as e:  # noqa: BLE001
                entry["error"] = str(e)
            result.append(entry)
    Path(out).write_text(json.dumps(result, indent=1), encoding="utf-8")


def main():
    command = sys.argv[1]
    if command == "write":
        write(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif command == "write-int":
        pq.write_table(pa.table({"text": pa.array([1, 2, 3], pa.int64())}), sys.argv[2])
    elif command == "write-forged":
        write_forged(sys.argv[2])
    elif command == "dump":
        dump(sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()

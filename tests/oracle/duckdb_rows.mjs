// DuckDB as an independent Parquet oracle for shoal's tests (never used by shoal itself).
//
//   node duckdb_rows.mjs read FILE.parquet   rows of the file as JSON lines, in the value mapping
//                                            of `shoal cat` (docs/cli.md); the first line is
//                                            {"__types__": {column: DuckDB type, ...}}
//   node duckdb_rows.mjs sql "STATEMENT;..." runs statements (e.g. COPY ... TO 'x.parquet')
//
// Module resolution: run with NODE_PATH pointing at the oracle cache's node_modules.
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(path.resolve(process.env.SHOAL_ORACLE_DIR || '.', 'node_modules', 'x.js'));
const duckdb = require('@duckdb/node-api');

function pad(n, width) {
  const s = String(n);
  return s.length >= width ? s : '0'.repeat(width - s.length) + s;
}

function civil(days) {  // days since epoch -> [y, m, d]
  let z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

function date(days) {
  const [y, m, d] = civil(days);
  return (y < 0 ? '-' + pad(-y, 4) : pad(y, 4)) + '-' + pad(m, 2) + '-' + pad(d, 2);
}

// units: bigint count of `perSecond` units since midnight / the epoch.
function clock(unitsOfDay, perSecond) {
  const secs = unitsOfDay / perSecond;
  const frac = unitsOfDay % perSecond;
  let s = pad(secs / 3600n, 2) + ':' + pad((secs / 60n) % 60n, 2) + ':' + pad(secs % 60n, 2);
  if (frac !== 0n) {
    if (perSecond === 1000000000n && frac % 1000n !== 0n) s += '.' + pad(frac, 9);
    else s += '.' + pad(perSecond === 1000n ? frac * 1000n : perSecond === 1000000n ? frac : frac / 1000n, 6);
  }
  return s;
}

function floorDiv(a, b) {
  const q = a / b;
  return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q;
}

function timestamp(units, perSecond, utc) {
  const perDay = 86400n * perSecond;
  const days = floorDiv(units, perDay);
  return date(Number(days)) + 'T' + clock(units - days * perDay, perSecond) + (utc ? 'Z' : '');
}

function decimal(value, scale) {
  const negative = value < 0n;
  let digits = (negative ? -value : value).toString();
  if (scale > 0) {
    if (digits.length <= scale) digits = '0'.repeat(scale - digits.length + 1) + digits;
    digits = digits.slice(0, digits.length - scale) + '.' + digits.slice(digits.length - scale);
  }
  return (negative ? '-' : '') + digits;
}

function number(x) {
  if (Number.isNaN(x)) return '"NaN"';
  if (x === Infinity) return '"Infinity"';
  if (x === -Infinity) return '"-Infinity"';
  return JSON.stringify(x);
}

function toJson(v) {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') return number(v);
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'string') return JSON.stringify(v);
  if (v instanceof duckdb.DuckDBBlobValue) return JSON.stringify(Buffer.from(v.bytes).toString('base64'));
  if (v instanceof duckdb.DuckDBDecimalValue) return JSON.stringify(decimal(v.value, v.scale));
  if (v instanceof duckdb.DuckDBDateValue) return JSON.stringify(date(v.days));
  if (v instanceof duckdb.DuckDBTimeValue) return JSON.stringify(clock(v.micros, 1000000n));
  if (v instanceof duckdb.DuckDBTimeNSValue) return JSON.stringify(clock(v.nanos, 1000000000n));
  if (v instanceof duckdb.DuckDBTimestampTZValue) return JSON.stringify(timestamp(v.micros, 1000000n, true));
  if (v instanceof duckdb.DuckDBTimestampValue) return JSON.stringify(timestamp(v.micros, 1000000n, false));
  if (v instanceof duckdb.DuckDBTimestampMillisecondsValue) return JSON.stringify(timestamp(v.millis, 1000n, false));
  if (v instanceof duckdb.DuckDBTimestampNanosecondsValue) return JSON.stringify(timestamp(v.nanos, 1000000000n, false));
  if (v instanceof duckdb.DuckDBUUIDValue) return JSON.stringify(v.toString());
  if (v instanceof duckdb.DuckDBListValue || v instanceof duckdb.DuckDBArrayValue) {
    return '[' + v.items.map(toJson).join(',') + ']';
  }
  if (v instanceof duckdb.DuckDBMapValue) {
    return '[' + v.entries.map(e => '{"key":' + toJson(e.key) + ',"value":' + toJson(e.value) + '}').join(',') + ']';
  }
  if (v instanceof duckdb.DuckDBStructValue) {
    return '{' + Object.entries(v.entries).map(([k, x]) => JSON.stringify(k) + ':' + toJson(x)).join(',') + '}';
  }
  return JSON.stringify(v.toString());
}

async function main() {
  const [command, arg] = process.argv.slice(2);
  const instance = await duckdb.DuckDBInstance.create(':memory:', { threads: '1' });
  const connection = await instance.connect();
  if (command === 'read') {
    const quoted = arg.replaceAll("'", "''");
    const reader = await connection.runAndReadAll(`SELECT * FROM read_parquet('${quoted}')`);
    const names = reader.columnNames();
    const types = reader.columnTypes().map(t => t.toString());
    const header = {};
    names.forEach((n, i) => { header[n] = types[i]; });
    const out = [JSON.stringify({ __types__: header })];
    for (const row of reader.getRows()) {
      out.push('{' + row.map((v, i) => JSON.stringify(names[i]) + ':' + toJson(v)).join(',') + '}');
    }
    process.stdout.write(out.join('\n') + '\n');
  } else if (command === 'sql') {
    const reader = await connection.runAndReadAll(arg);
    const names = reader.columnNames();
    for (const row of reader.getRows()) {
      process.stdout.write('{' + row.map((v, i) => JSON.stringify(names[i]) + ':' + toJson(v)).join(',') + '}\n');
    }
  } else {
    process.stderr.write('usage: duckdb_rows.mjs read FILE | sql STATEMENTS\n');
    process.exit(2);
  }
}

main().catch(e => { process.stderr.write(String(e && e.message || e) + '\n'); process.exit(1); });

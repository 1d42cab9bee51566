// DuckDB's single-thread scan time of a Parquet file: the TABLE_SCAN operator of a query that
// reads every top-level column, from DuckDB's own profiler. Prints one JSON line.
//   SHOAL_ORACLE_DIR=.cache/oracle node bench/duckdb_scan.mjs FILE [REPEAT]
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(path.resolve(process.env.SHOAL_ORACLE_DIR || '.cache/oracle', 'node_modules', 'x.js'));
const duckdb = require('@duckdb/node-api');

const [file, repeatArg] = process.argv.slice(2);
const repeat = Math.max(1, Number(repeatArg || 3));
const instance = await duckdb.DuckDBInstance.create(':memory:', { threads: '1' });
const c = await instance.connect();
const quoted = file.replaceAll("'", "''");
const columns = (await c.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${quoted}')`)).getRows().map(r => r[0]);
// hash() makes DuckDB read every value: plain max() is answered from row-group statistics.
const select = columns.map(n => `max(hash("${n.replaceAll('"', '""')}"))`).join(', ');
const profile = path.join(os.tmpdir(), `shoal_duckdb_profile_${process.pid}.json`);
await c.run("PRAGMA enable_profiling='json'");
await c.run(`PRAGMA profiling_output='${profile}'`);

function scanSeconds(node) {
  let total = 0;
  if (node.operator_type === 'TABLE_SCAN' || node.operator_type === 'READ_PARQUET') total += node.operator_timing;
  for (const child of node.children || []) total += scanSeconds(child);
  return total;
}

const seconds = [];
let rows = 0;
for (let r = 0; r < repeat; r++) {
  await c.run(`SELECT ${select} FROM read_parquet('${quoted}')`);
  const p = JSON.parse(fs.readFileSync(profile, 'utf8'));
  seconds.push(scanSeconds(p));
  rows = p.cumulative_rows_scanned ?? rows;
}
fs.rmSync(profile, { force: true });
seconds.sort((a, b) => a - b);
console.log(JSON.stringify({ engine: 'duckdb', file, rows, seconds_best: seconds[0], seconds_median: seconds[Math.floor(seconds.length / 2)] }));

// Side-by-side single-thread scan: shoal against DuckDB (threads=1) on the same files, in one
// run, alternating engines round by round. Prints a markdown table of ratios, with the machine.
//
//   make bench-parquet                        (builds, then runs this)
//   node bench/parquet_scan_compare.mjs BUILD_DIR [--rounds N] [--memory]
//
// Files (generated into BUILD_DIR/bench-data when missing):
//   a_int_double.parquet  10M rows, int64 + double, snappy, written by DuckDB
//   b_string.parquet      5M rows, one string column, snappy, written by DuckDB
//   c_png.parquet         Fashion-MNIST train set as PNG bytes + int label, snappy, written by shoal
// --memory also writes a file of more than 1 GB and reports shoal's peak RSS scanning it against
// twice the largest row group's decoded size plus 64 MB.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const args = process.argv.slice(2);
const build = path.resolve(args[0] || 'build');
const rounds = Number(args[args.indexOf('--rounds') + 1] || 0) || 3;
const memory = args.includes('--memory');
const here = path.dirname(new URL(import.meta.url).pathname);
const oracle = path.resolve(process.env.SHOAL_ORACLE_DIR || path.join(here, '..', '.cache', 'oracle'));
const require = createRequire(path.join(oracle, 'node_modules', 'x.js'));
const duckdb = require('@duckdb/node-api');

const data = path.join(build, 'bench-data');
fs.mkdirSync(data, { recursive: true });
const scan = path.join(build, 'bench', 'shoal_parquet_scan');
const fmnist = '/usr/share/datasets/fashion-mnist';

async function sql(statement, threads = String(os.cpus().length)) {
  const instance = await duckdb.DuckDBInstance.create(':memory:', { threads });
  const c = await instance.connect();
  return c.runAndReadAll(statement);
}

async function ensure(file, make) {
  const p = path.join(data, file);
  if (!fs.existsSync(p)) {
    process.stderr.write(`generating ${p}\n`);
    await make(p);
  }
  return p;
}

const files = {
  'a: int64 + double, snappy, dictionary': await ensure('a_int_double.parquet', p =>
    sql(`COPY (SELECT (i % 5000)::BIGINT * 1000003 AS id, ((i % 4096) * 0.25)::DOUBLE AS x FROM range(10000000) t(i))
         TO '${p}' (FORMAT parquet, COMPRESSION 'snappy')`)),
  'b: string column, snappy': await ensure('b_string.parquet', p =>
    sql(`COPY (SELECT 'user_' || (hash(i) % 3000000)::VARCHAR || '_' || (i % 7)::VARCHAR AS name FROM range(5000000) t(i))
         TO '${p}' (FORMAT parquet, COMPRESSION 'snappy')`)),
  'c: PNG images + int label, snappy': await ensure('c_png.parquet', async p => {
    execFileSync(path.join(build, 'bench', 'shoal_make_png_table'),
      [`${fmnist}/train-images-idx3-ubyte.gz`, `${fmnist}/train-labels-idx1-ubyte.gz`, p], { stdio: 'inherit' });
  }),
};

async function duckdbScan(file, repeat) {
  const instance = await duckdb.DuckDBInstance.create(':memory:', { threads: '1' });
  const c = await instance.connect();
  const q = file.replaceAll("'", "''");
  const columns = (await c.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${q}')`)).getRows().map(r => r[0]);
  // hash() makes DuckDB read every value: a plain max() is answered from row-group statistics.
  const select = columns.map(n => `max(hash("${n.replaceAll('"', '""')}"))`).join(', ');
  const profile = path.join(os.tmpdir(), `shoal_duckdb_profile_${process.pid}.json`);
  await c.run("PRAGMA enable_profiling='json'");
  await c.run(`PRAGMA profiling_output='${profile}'`);
  const scanSeconds = n => (n.operator_type === 'TABLE_SCAN' ? n.operator_timing : 0) +
    (n.children || []).reduce((s, k) => s + scanSeconds(k), 0);
  const seconds = [];
  for (let r = 0; r < repeat; r++) {
    await c.run(`SELECT ${select} FROM read_parquet('${q}')`);
    seconds.push(scanSeconds(JSON.parse(fs.readFileSync(profile, 'utf8'))));
  }
  fs.rmSync(profile, { force: true });
  return Math.min(...seconds);
}

function shoalScan(file, repeat, extra = []) {
  const out = execFileSync(scan, [file, '--repeat', String(repeat), ...extra], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop());
}

const cpu = (fs.readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/) || [])[1] || os.arch();
console.log(`Machine: ${cpu}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB; ` +
            `${rounds} rounds, best of each; DuckDB ${duckdb.version ? duckdb.version() : ''} with threads=1 (TABLE_SCAN operator time).`);
console.log('');
console.log('| file | rows | MB | shoal s | shoal s, no CRC check | DuckDB s | DuckDB / shoal | DuckDB / shoal, no CRC |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const [name, file] of Object.entries(files)) {
  let best = { shoal: Infinity, nocrc: Infinity, duckdb: Infinity };
  let rows = 0;
  for (let r = 0; r < rounds; r++) {
    const s = shoalScan(file, 2);
    rows = s.rows;
    best.shoal = Math.min(best.shoal, s.seconds_best);
    best.nocrc = Math.min(best.nocrc, shoalScan(file, 2, ['--no-verify']).seconds_best);
    best.duckdb = Math.min(best.duckdb, await duckdbScan(file, 2));
  }
  const mb = fs.statSync(file).size / 1e6;
  console.log(`| ${name} | ${rows} | ${mb.toFixed(0)} | ${best.shoal.toFixed(3)} | ${best.nocrc.toFixed(3)} | ` +
              `${best.duckdb.toFixed(3)} | ${(best.duckdb / best.shoal).toFixed(2)}x | ${(best.duckdb / best.nocrc).toFixed(2)}x |`);
}

if (memory) {
  const big = await ensure('big.parquet', p =>
    sql(`COPY (SELECT hash(i) AS h, random() AS r, md5(i::VARCHAR) || md5((i * 7)::VARCHAR) AS s FROM range(14000000) t(i))
         TO '${p}' (FORMAT parquet, COMPRESSION 'snappy')`));
  const s = shoalScan(big, 1);
  const bound = 2 * s.max_row_group_decoded_bytes + 64 * 2 ** 20;
  console.log('');
  console.log(`Memory: scanning ${(fs.statSync(big).size / 1e9).toFixed(2)} GB (${s.rows} rows): peak RSS ` +
              `${(s.peak_rss_bytes / 2 ** 20).toFixed(1)} MiB; largest row group decoded ${(s.max_row_group_decoded_bytes / 2 ** 20).toFixed(1)} MiB; ` +
              `bound 2 x that + 64 MiB = ${(bound / 2 ** 20).toFixed(1)} MiB: ${s.peak_rss_bytes < bound ? 'within' : 'OVER'}.`);
}

-- runs/log-batch with 1000 metrics a request (10 keys x 100 steps; steps advance per request),
-- for bench/track_bench.py. The run comes from SHOAL_BENCH_RUN.
local run = os.getenv("SHOAL_BENCH_RUN")
local threads = 0
local step = 0

function setup(thread)
  thread:set("offset", threads * 1000000000)
  threads = threads + 1
end

function init(args)
  step = offset or 0
end

request = function()
  local parts = {}
  for i = 0, 99 do
    for k = 0, 9 do
      parts[#parts + 1] = string.format('{"key":"m%d","value":%d.5,"timestamp":1700000000000,"step":%d}', k, i, step + i)
    end
  end
  step = step + 100
  local body = '{"run_id":"' .. run .. '","metrics":[' .. table.concat(parts, ",") .. ']}'
  return wrk.format("POST", "/api/2.0/mlflow/runs/log-batch", {["Content-Type"] = "application/json"}, body)
end

response = function(status, headers, body)
  if status ~= 200 then
    io.stderr:write("log-batch: HTTP " .. status .. ": " .. body .. "\n")
    os.exit(1)
  end
end

-- runs/log-metric at a fixed pace: each connection waits SHOAL_BENCH_DELAY_MS between requests,
-- so C connections offer about C * 1000 / delay requests a second. For bench/track_bench.py.
local run = os.getenv("SHOAL_BENCH_RUN")
local pause = tonumber(os.getenv("SHOAL_BENCH_DELAY_MS") or "10")
local step = 0

request = function()
  step = step + 1
  local body = string.format('{"run_id":"%s","key":"loss","value":%f,"timestamp":1700000000000,"step":%d}', run, 1.0 / step, step)
  return wrk.format("POST", "/api/2.0/mlflow/runs/log-metric", {["Content-Type"] = "application/json"}, body)
end

delay = function()
  return pause
end

response = function(status, headers, body)
  if status ~= 200 then
    io.stderr:write("log-metric: HTTP " .. status .. ": " .. body .. "\n")
    os.exit(1)
  end
end

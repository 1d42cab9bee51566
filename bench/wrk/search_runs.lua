-- runs/search with a metric filter over the seeded experiment (SHOAL_BENCH_EXPERIMENT), MLflow's
-- default page of 1000 runs, for bench/track_bench.py.
local experiment = os.getenv("SHOAL_BENCH_EXPERIMENT")
local filter = os.getenv("SHOAL_BENCH_FILTER") or "metrics.val_loss < 0.5"

request = function()
  local body = '{"experiment_ids":["' .. experiment .. '"],"filter":"' .. filter .. '","max_results":1000}'
  return wrk.format("POST", "/api/2.0/mlflow/runs/search", {["Content-Type"] = "application/json"}, body)
end

response = function(status, headers, body)
  if status ~= 200 then
    io.stderr:write("runs/search: HTTP " .. status .. ": " .. body .. "\n")
    os.exit(1)
  end
end

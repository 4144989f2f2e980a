-- wrk script: POST /api/sow/SOW/items, a new task item each time.
--
--   wrk -s bench/post_items.lua URL -- SOW TOKEN
--
-- Every request is a 201 that records an item.created event: what webhook deliveries
-- (bench/bench_webhooks.py) have to carry.

local sow, token

function init(args)
  sow, token = args[1], args[2]
end

function request()
  local body = '{"title":"bench item","type":"task_item"}'
  local headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }
  return wrk.format("POST", "/api/sow/" .. sow .. "/items", headers, body)
end

-- wrk script: GET /api/items/ID, cycling through every item id of a file.
--
--   wrk -s bench/get_items.lua URL -- IDS_FILE TOKEN
--
-- IDS_FILE has one item id per line. Each wrk thread starts at its own point of the list
-- (thread k of n at k/n of it), so the threads read different items at the same time.

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("offset", #threads - 1)
  thread:set("count", 0)
end

local ids = {}
local position = 0

function init(args)
  for line in io.lines(args[1]) do
    if line ~= "" then
      table.insert(ids, line)
    end
  end
  assert(#ids > 0, "no ids in " .. tostring(args[1]))
  position = math.floor((offset or 0) * #ids / math.max(#threads, 2))
  wrk.headers["Authorization"] = "Bearer " .. args[2]
end

function request()
  local id = ids[(position % #ids) + 1]
  position = position + 1
  return wrk.format("GET", "/api/items/" .. id)
end

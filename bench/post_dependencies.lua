-- wrk script: POST /api/dependencies, cycling through precomputed item pairs.
--
--   wrk -s bench/post_dependencies.lua URL -- PAIRS_FILE TOKEN STRIDE
--
-- A line may name a third field, the token to send that pair with (pairs spread over
-- several organizations, each with its own token); otherwise TOKEN is used.
--
-- PAIRS_FILE has one "source target" pair per line, each a depends_on from a later to
-- an earlier item of one SOW (in the dataset's creation order, which every ordering
-- edge of the generated dataset agrees with), so no request can ever close a cycle:
-- every request is a real 201 that runs the full cycle check. Each wrk thread has its
-- own Lua state; thread k sends pairs k, k + n, k + 2n, ... of n threads, so the
-- threads never send the same pair at the same time (a pair sent again after the list
-- wrapped around is a duplicate dependency, which is allowed and still acyclic).

local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("offset", #threads - 1)
end

local pairs_list = {}
local position = 0
local stride = 1

function init(args)
  local path, token = args[1], args[2]
  for line in io.lines(path) do
    local source, target, own = line:match("^(%S+)%s+(%S+)%s*(%S*)$")
    if source then
      table.insert(pairs_list, { source, target, own ~= "" and own or nil })
    end
  end
  assert(#pairs_list > 0, "no pairs in " .. tostring(path))
  stride = tonumber(args[3] or "1")
  position = offset or 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. token
end

function request()
  local pair = pairs_list[(position % #pairs_list) + 1]
  position = position + stride
  local body = string.format(
    '{"sourceItemId":"%s","targetItemId":"%s","dependencyType":"depends_on","riskLevel":"low"}',
    pair[1], pair[2])
  local headers = nil
  if pair[3] then
    headers = { ["Authorization"] = "Bearer " .. pair[3], ["Content-Type"] = "application/json" }
  end
  return wrk.format(nil, "/api/dependencies", headers, body)
end

-- wrk script for bench/soak.sh: admitted visitors as bench/browser-cookie.lua sends them (the
-- last cookie the gateway set), each connection pausing between requests so that a long soak
-- loads the machine without saturating it.
--   wrk -s bench/soak-admitted.lua URL -- COOKIE PAUSE_MS
dofile("bench/browser-cookie.lua")

local base_init = init
local pause = 0

function init(args)
  base_init(args)
  pause = tonumber(args[2]) or 0
end

function delay()
  return pause
end

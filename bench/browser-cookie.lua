-- wrk script: sends the admission cookie as a browser does, the last one the gateway set.
-- `wrk -s bench/browser-cookie.lua URL -- COOKIE` starts with COOKIE ("name=value"). A fixed
-- `-H Cookie:` would replay one stale cookie: once its window has passed, every request
-- renews (and re-encrypts) it, which no real visitor causes.
local req

local function build(cookie)
  if cookie ~= nil and cookie ~= "" then
    return wrk.format(nil, nil, { ["Cookie"] = cookie })
  end
  return wrk.format()
end

function init(args)
  req = build(args[1])
end

function request()
  return req
end

function response(status, headers, body)
  local set = headers["Set-Cookie"] or headers["set-cookie"]
  if set ~= nil then
    req = build(set:match("^[^;]+"))
  end
end

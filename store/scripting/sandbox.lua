-- The script environment Redis 7.0 builds (eval.c, script_lua.c), made in the Lua state
-- once at start-up. Python passes its callbacks in; this chunk returns the functions the
-- engine drives. The error handler skips this chunk's frames (SELF), so errors name the
-- user's line, as they do in Redis, where these functions are C.
local api, pyhook, pyerror, version, version_num = ...

-- V is the global table scripts see; lupa keeps using the state's own (_G), which
-- needs `debug` for its tracebacks.
local V = {}
for k, v in pairs(_G) do V[k] = v end
local error, type, tostring, setmetatable, getmetatable, rawset, next, select =
      error, type, tostring, setmetatable, getmetatable, rawset, next, select
local loadstring, setfenv, unpack, ipairs, pairs = loadstring, setfenv, unpack, ipairs, pairs
local getinfo, sethook = debug.getinfo, debug.sethook
local SELF = getinfo(1, 'S').source

-- The redis API is Python (api), made C functions, so a
-- `return redis.call(...)` keeps the caller's frame for the error's line, as in Redis.
-- Their errors arrive as Python exceptions holding the error table: pyerror unwraps them
-- (in the handler, and in pcall / xpcall, so scripts see Redis's error tables).
local as_function = python.as_function  -- a Python callable as a true C function
local redis = {}
for k, v in pairs(api) do redis[k] = as_function(v) end
V.redis = redis
redis.REDIS_VERSION = version
redis.REDIS_VERSION_NUM = version_num
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3

local function unwrap(ok, ...)
  if ok then return ok, ... end
  local e = ...
  if type(e) == 'userdata' then e = pyerror(e) end
  return false, e
end
-- Redis 7.0's pcall (luaRedisPcall) hands a caught error table over as its err string.
local function pcall_result(ok, ...)
  if ok then return ok, ... end
  local e = ...
  if type(e) == 'userdata' then e = pyerror(e) end
  if type(e) == 'table' then
    local msg = e.err
    if type(msg) == 'string' or type(msg) == 'number' then e = msg end
  end
  return false, e
end
local pcall0, xpcall0, resume0 = pcall, xpcall, coroutine.resume
V.pcall = function(...) return pcall_result(pcall0(...)) end
V.xpcall = function(f, h)
  return xpcall0(f, function(e)
    if type(e) == 'userdata' then e = pyerror(e) end
    return h(e)
  end)
end
coroutine.resume = function(...) return unwrap(resume0(...)) end

-- What Redis 7.0 leaves out of the global table.
for _, name in ipairs({'print', 'dofile', 'loadfile', 'io', 'os', 'package', 'require',
                       'module', 'setfenv', 'getfenv', 'newproxy', 'python', 'debug'}) do
  V[name] = nil
end

-- The error handler every script runs under (__redis__err__handler): the error becomes a
-- table {err=..., source=..., line=...} naming the script line that raised it.
local function handler(err)
  local level = 2
  local i = getinfo(level, 'nSl')
  while i and (i.what == 'C' or i.source == SELF) do
    level = level + 1
    i = getinfo(level, 'nSl')
  end
  if type(err) == 'userdata' then err = pyerror(err) end
  if type(err) ~= 'table' then err = {err = 'ERR ' .. tostring(err)} end
  if i then
    err.source = i.source
    err.line = i.currentline
  end
  return err
end
V.__redis__err__handler = handler

-- Read-only tables, as Redis 7.0's lua_enablereadonlytable makes them: scripts read
-- through a proxy whose writes fail; reading a missing global fails too.
local real_of = setmetatable({}, {__mode = 'k'})
local function readonly() error('Attempt to modify a readonly table', 2) end
local function protect(t)
  local proxy = setmetatable({}, {__index = t, __newindex = readonly})
  real_of[proxy] = t
  return proxy
end
for _, name in ipairs({'string', 'table', 'math', 'redis', 'bit', 'cjson', 'struct',
                       'cmsgpack', 'coroutine'}) do
  if V[name] then V[name] = protect(V[name]) end
end
V.rawset = function(t, k, v)
  if real_of[t] then error('Attempt to modify a readonly table', 0) end
  return rawset(t, k, v)
end
V.setmetatable = function(t, m)
  if real_of[t] then error('Attempt to modify a readonly table', 0) end
  return setmetatable(t, m)
end
V.getmetatable = function(t)
  if real_of[t] then return nil end
  return getmetatable(t)
end
V.next = function(t, k) return next(real_of[t] or t, k) end
V.pairs = function(t)
  if type(t) ~= 'table' then
    error("bad argument #1 to 'pairs' (table expected, got " .. type(t) .. ')', 0)
  end
  return V.next, t, nil
end
local env = protect(V)
V._G = env
setmetatable(V, {__index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end})

-- compile(body, chunkname): the function, or nil and Lua's message.
local function compile(body, chunkname)
  local f, err = loadstring(body, chunkname)
  if not f then return nil, err end
  setfenv(f, env)
  return f, nil
end

-- The count hook stays set: every 100,000 instructions it asks Python whether the
-- running script is past busy-reply-threshold (other clients are then served) or killed.
-- After a kill it runs on every line, so a pcall cannot swallow the kill; the next run
-- puts it back (`killed`).
local killed = false
local function hook()
  local e = pyhook()
  if e ~= nil then
    killed = true
    sethook(hook, 'l')
    error(e)
  end
end
sethook(hook, '', 100000)

-- run(f, ...): true and f's first result, or false and the error table (a string for
-- errors the handler cannot see, as out of memory). What follows the call is on the
-- call's line, with no Lua function called: a killed script's line hook must not fire.
local function run(f, ...)
  local n, args = select('#', ...), {...}
  local ok, r = xpcall0(function() return f(unpack(args, 1, n)) end, handler) if killed then killed = false sethook(hook, '', 100000) end return ok, r
end

-- run_eval(f, numkeys, ...): EVAL's run, the arguments split into KEYS and ARGV.
local function run_eval(f, numkeys, ...)
  local all, keys, argv = {...}, {}, {}
  for i = 1, numkeys do keys[i] = all[i] end
  for i = numkeys + 1, select('#', ...) do argv[i - numkeys] = all[i] end
  rawset(V, 'KEYS', keys)
  rawset(V, 'ARGV', argv)
  local ok, r = xpcall0(f, handler) if killed then killed = false sethook(hook, '', 100000) end return ok, r
end

-- set_global(name, value): a global written past the read-only guard.
local function set_global(name, value) rawset(V, name, value) end

return compile, run, run_eval, set_global, protect

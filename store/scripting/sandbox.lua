-- The script environment Redis 7.0 builds (eval.c, script_lua.c), made in the Lua state
-- once at start-up. Python passes its callbacks in; this chunk returns the functions the
-- engine drives. The error handler skips this chunk's frames (SELF), so errors name the
-- user's line, as they do in Redis, where these functions are C.
local api, pyhook, pyerror, version, version_num, call_table, deprecated_api = ...

-- V is the global table scripts see; lupa keeps using the state's own (_G), which keeps
-- `debug` until the engine is sealed (LuaEngine.seal).
local V = {}
for k, v in pairs(_G) do V[k] = v end
local error, type, tostring, setmetatable, getmetatable, rawset, rawget, next, select =
      error, type, tostring, setmetatable, getmetatable, rawset, rawget, next, select
local loadstring, setfenv, ipairs, pairs = loadstring, setfenv, ipairs, pairs
local getinfo, sethook, getlocal, setlocal = debug.getinfo, debug.sethook, debug.getlocal,
                                             debug.setlocal
local SELF = getinfo(1, 'S').source

-- The redis API is Python (api), made true C functions, so a `return redis.call(...)`
-- keeps the caller's frame for the error's line, as in Redis. Their errors arrive as
-- Python exceptions holding the error table: pyerror unwraps them (in the handler, and in
-- pcall / xpcall / coroutine.resume, so scripts see Redis's error tables).
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

-- What Redis 7.0 leaves out of the global table; setfenv, getfenv and newproxy stay with
-- lua-enable-deprecated-api (a config of Redis's CVE fixes, as Debian's 7.0.15 has them).
for _, name in ipairs({'print', 'dofile', 'loadfile', 'io', 'os', 'package', 'require',
                       'module', 'python', 'debug'}) do
  V[name] = nil
end
if not deprecated_api then V.setfenv, V.getfenv, V.newproxy = nil, nil, nil end

-- Redis's Lua parses every chunk as text (its f_parser has no undump): a precompiled
-- chunk (string.dump's, "\27Lua...") is a syntax error there, not code. A space before
-- the ESC makes lupa's Lua read it as text too, with the same message.
local loadstring0, load0, byte = loadstring, load, string.byte
V.loadstring = function(s, chunkname)
  if type(s) == 'string' and byte(s, 1) == 27 then return loadstring0(' ' .. s, chunkname or s) end
  return loadstring0(s, chunkname)
end
V.load = function(reader, chunkname)
  if type(reader) ~= 'function' then return load0(reader, chunkname) end
  local first = true
  return load0(function()
    local piece = reader()
    if first and piece ~= nil then
      first = false
      if type(piece) == 'string' and byte(piece, 1) == 27 then return ' ' .. piece end
    end
    return piece
  end, chunkname)
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
  if i and i.what ~= 'tail' then  -- (a tail call's line is gone: what the error has)
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
-- Strings share one metatable: scripts see it read-only, its __index the read-only
-- string table, so that no script can change string methods for the scripts after it.
local string_metatable = protect({__index = V.string})
local env, env_metatable  -- the scripts' _G, and its metatable read-only (below)
V.getmetatable = function(t)
  if type(t) == 'string' then return string_metatable end
  if real_of[t] then return t == env and env_metatable or nil end
  return getmetatable(t)
end
V.next = function(t, k) return next(real_of[t] or t, k) end
V.pairs = function(t)  -- (level 2: the caller's position, as luaL_argerror gives it)
  if type(t) ~= 'table' then
    error("bad argument #1 to 'pairs' (table expected, got " .. type(t) .. ')', 2)
  end
  return V.next, t, nil
end

-- unpack as Redis 7.0 patched it (luaB_unpack in its deps/lua): lupa's Lua 5.1 counts
-- e - i + 1 in an int that overflows, and unpack({}, -2, 2^31 - 1) crashes the process.
-- A range that cannot overflow goes to the C unpack (unpack0) with the caller's own
-- arguments, so its C stack limit is Redis's: the arguments and the results within
-- LUAI_MAXCSTACK (8000 slots). Any other is checked here first, with luaL_argerror's and
-- luaL_error's messages (level 2: the caller's position).
local unpack0, floor = unpack, math.floor
local INT_MIN, INT_MAX = -2147483648, 2147483647
local function argerror(narg, extramsg)  -- luaL_argerror, for its caller (level 2)
  local ar = getinfo(2, 'n')
  if getinfo(3, 'S').what == 'tail' then  -- tail-called: its name and line are gone
    ar = {name = 'unpack'}
  end
  if ar and ar.namewhat == 'method' then
    narg = narg - 1
    if narg == 0 then
      error("calling '" .. tostring(ar.name) .. "' on bad self (" .. extramsg .. ')', 3)
    end
  end
  error('bad argument #' .. narg .. " to '" .. (ar and ar.name or '?') .. "' (" .. extramsg
        .. ')', 3)
end
local function toint(v)  -- luaL_checkint: (int) of the (ptrdiff_t) of the number, or nil
  local x = tonumber(v)
  if x == nil then return nil end
  if x ~= x or x >= 2^63 or x < -2^63 then return 0 end  -- LONG_MIN: its low 32 bits
  x = (x >= 0 and floor(x) or -floor(-x)) % 4294967296
  return x > INT_MAX and x - 4294967296 or x
end
-- A call of redis.call or redis.pcall (as the C functions Python made of them, call_c and
-- pcall_c) with more arguments than lupa passes to Python (its frame holds 7997): the
-- Lua function that passes them in a table instead, made where a big unpack() is the
-- argument list. If the script's line that called it is gone (a tail call), an error
-- names the line it had (`source`, `line`).
local call_c, pcall_c = redis.call, redis.pcall
local function table_call(is_pcall, source, line)
  return function(...)
    local ok, r = pcall0(call_table, is_pcall, {n = select('#', ...), ...})
    if ok then return r end
    if type(r) == 'userdata' then r = pyerror(r) end
    if type(r) == 'table' then r.source, r.line = source, line end
    error(r, 0)
  end
end
V.unpack = function(...)
  local nargs, t, i, e = select('#', ...), ...
  if type(t) == 'table' and nargs <= 3 then  -- the common case: a small range
    local a, b = i, e
    if a == nil then a = 1 end
    if b == nil then b = #t end
    if type(a) == 'number' and type(b) == 'number' and a >= INT_MIN and a <= INT_MAX
       and b >= INT_MIN and b <= INT_MAX and b - a < 7000 then
      return unpack0(...)
    end
  end
  if type(t) ~= 'table' then
    argerror(1, 'table expected, got ' .. (nargs < 1 and 'no value' or type(t)))
  end
  if i == nil then i = 1 else
    i = toint(i) or argerror(2, 'number expected, got ' .. type(i))
  end
  if e == nil then e = #t else
    e = toint(e) or argerror(3, 'number expected, got ' .. type(e))
  end
  if i > e then return end
  local n = e - i + 1
  if n >= INT_MAX or nargs + n > 8000 then error('too many results to unpack', 2) end
  if n >= 7000 then
    -- the results may be the arguments of a redis.call pending in the caller (a
    -- temporary of its frame): that call gets a Lua function able to take them
    local ar = getinfo(2, 'Sl')
    local k, name, v = 1, getlocal(2, 1)
    while name ~= nil do
      if name == '(*temporary)' and (v == call_c or v == pcall_c) then
        setlocal(2, k, table_call(v == pcall_c, ar.source, ar.currentline))
      end
      k = k + 1
      name, v = getlocal(2, k)
    end
  end
  return unpack0(...)
end

env = protect(V)
V._G = env
setmetatable(V, {__index = function(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end})
env_metatable = protect(getmetatable(V))

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

-- run_eval(f, numkeys, ...) and run_fcall(f, numkeys, ...): run f on the arguments of
-- EVAL or FCALL after their numkeys (keys first, then the rest): true and f's first
-- result, or false and the error table (a string for errors the handler cannot see, as
-- out of memory). An EVAL script finds them in the globals KEYS and ARGV, a function gets
-- them as its two arguments. What follows the call is on the call's line, with no Lua
-- function called: a killed script's line hook must not fire.
local function split(numkeys, ...)
  local keys, argv = {...}, {}  -- one table made for the keys, the rest moved out of it
  for i = numkeys + 1, select('#', ...) do argv[i - numkeys] = keys[i] keys[i] = nil end
  return keys, argv
end
local function run_eval(f, numkeys, ...)
  V.KEYS, V.ARGV = split(numkeys, ...)
  local ok, r = xpcall0(f, handler) if killed then killed = false sethook(hook, '', 100000) end return ok, r
end
local function run_fcall(f, numkeys, ...)
  local keys, argv = split(numkeys, ...)
  local ok, r = xpcall0(function() return f(keys, argv) end, handler) if killed then killed = false sethook(hook, '', 100000) end return ok, r
end

-- reply(v, proto, resp): the script's result as the caller's reply bytes, for a client
-- speaking `proto` from a script under redis.setresp(resp) (luaReplyToRedisReply, in its
-- order of checks). A value nested MAXDEPTH deep is Redis's error for its exhausted Lua
-- stack (LUAI_MAXCSTACK, 8000 slots): an array's elements sit one slot above it, a set's
-- three, a map's keys four and its values three.
local MAXDEPTH = 7995
local format, gsub, sub, concat, floor = string.format, string.gsub, string.sub, table.concat,
                                         math.floor
-- Headers of short bulk strings and small integers, made once: most of a big reply is
-- then table lookups, not new strings.
local BULK = setmetatable({}, {__index = function(t, len)
  local h = '$' .. len .. '\r\n'
  if len < 4096 then rawset(t, len, h) end
  return h
end})
local INT = setmetatable({}, {__index = function(t, v)
  local s = format(':%d\r\n', v)  -- (long) of the number, as Redis casts it
  if v == floor(v) and v >= -1024 and v < 65536 then rawset(t, v, s) end
  return s
end})
local function oneline(s) return (gsub(s, '[\r\n]', ' ')) end

-- put(out, n, v, ...): v's reply appended after out[n]; the new n. The error replies
-- it writes are noted for INFO errorstats: in `errors`, or counted in `marked` when a
-- redis.call got them (counted then, ignore_error_stats_update).
local errors, marked
local function put(out, n, v, proto, resp, depth)
  if depth >= MAXDEPTH then out[n + 1] = '-ERR reached lua stack limit\r\n' return n + 1 end
  local t = type(v)
  if t == 'string' then
    out[n + 1], out[n + 2], out[n + 3] = BULK[#v], v, '\r\n'
    return n + 3
  elseif t == 'number' then
    out[n + 1] = INT[v]
    return n + 1
  elseif t == 'boolean' then
    if resp == 2 then
      out[n + 1] = v and ':1\r\n' or (proto == 3 and '_\r\n' or '$-1\r\n')
    elseif proto == 3 then
      out[n + 1] = v and '#t\r\n' or '#f\r\n'
    else
      out[n + 1] = v and ':1\r\n' or ':0\r\n'
    end
    return n + 1
  elseif t ~= 'table' then
    out[n + 1] = proto == 3 and '_\r\n' or '$-1\r\n'
    return n + 1
  end
  local x = rawget(v, 'err')
  if type(x) == 'string' then
    x = oneline(x)
    if rawget(v, 'ignore_error_stats_update') then marked = marked + 1 else errors[#errors + 1] = x end
    out[n + 1] = '-' .. x .. '\r\n'
    return n + 1
  end
  x = rawget(v, 'ok')
  if type(x) == 'string' then out[n + 1] = '+' .. oneline(x) .. '\r\n' return n + 1 end
  x = rawget(v, 'double')
  if type(x) == 'number' then
    local d = format('%.17g', x)
    out[n + 1] = proto == 3 and (',' .. d .. '\r\n') or (BULK[#d] .. d .. '\r\n')
    return n + 1
  end
  x = rawget(v, 'big_number')
  if type(x) == 'string' then
    x = oneline(x)
    out[n + 1] = proto == 3 and ('(' .. x .. '\r\n') or (BULK[#x] .. x .. '\r\n')
    return n + 1
  end
  x = rawget(v, 'verbatim_string')
  if type(x) == 'table' then
    local f, str = rawget(x, 'format'), rawget(x, 'string')
    if type(f) == 'string' and type(str) == 'string' then
      if proto == 3 then
        out[n + 1] = '=' .. (#str + 4) .. '\r\n' .. sub(f .. '   ', 1, 3) .. ':'
      else
        out[n + 1] = BULK[#str]
      end
      out[n + 2], out[n + 3] = str, '\r\n'
      return n + 3
    end
  end
  local head, count = n + 1, 0  -- out[head]: the header, once the length is known
  local m = head
  x = rawget(v, 'map')
  if type(x) == 'table' then
    for k, e in next, x do
      m = put(out, m, k, proto, resp, depth + 4)
      m = put(out, m, e, proto, resp, depth + 3)
      count = count + 1
    end
    out[head] = proto == 3 and ('%' .. count .. '\r\n') or ('*' .. 2 * count .. '\r\n')
    return m
  end
  x = rawget(v, 'set')
  if type(x) == 'table' then
    for k in next, x do
      m = put(out, m, k, proto, resp, depth + 3)
      count = count + 1
    end
    out[head] = (proto == 3 and '~' or '*') .. count .. '\r\n'
    return m
  end
  x = rawget(v, 1)
  while x ~= nil do
    count = count + 1
    m = put(out, m, x, proto, resp, depth + 1)
    x = rawget(v, count + 1)
  end
  out[head] = '*' .. count .. '\r\n'
  return m
end
-- reply(...): the bytes, the error messages to count (nil for none), how many were marked.
local function reply(v, proto, resp)
  local out = {}
  errors, marked = {}, 0
  put(out, 0, v, proto, resp, 0)
  return concat(out), errors[1] and errors, marked
end

return compile, run_eval, run_fcall, reply, redis  -- (redis: the real table, for ldb.py)

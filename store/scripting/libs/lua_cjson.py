"""`cjson`, lua-cjson 2.1.0 as Redis 7.0 links it: encode, decode, their configuration
(encode_max_depth, decode_max_depth, encode_number_precision, encode_keep_buffer,
encode_invalid_numbers, decode_invalid_numbers, encode_escape_forward_slash), new, null.

All Lua: tables are walked with the same operations, and so in the same order, as the C
version walks them (`next`), so an object's keys come out in the order Redis's do;
array detection (lua_array_length, the sparse-array ratio), number formatting
("%.14g" by default), the escapes, the depth limits and the C stack limit are the C's.
Decoding is a tokenizer and a recursive-descent parser over the text up to its first
NUL, with the C's error messages (token names and positions); numbers are read as glibc's
strtod reads them, then refused where JSON does not allow them.
"""

from __future__ import annotations

LUA = rb"""
local null = newproxy(false)

local T_OBJ_BEGIN, T_OBJ_END, T_ARR_BEGIN, T_ARR_END, T_STRING, T_NUMBER, T_BOOLEAN,
      T_NULL, T_COLON, T_COMMA, T_END, T_WHITESPACE, T_ERROR, T_UNKNOWN =
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
local TOKEN_NAME = {[0] = 'T_OBJ_BEGIN', 'T_OBJ_END', 'T_ARR_BEGIN', 'T_ARR_END',
  'T_STRING', 'T_NUMBER', 'T_BOOLEAN', 'T_NULL', 'T_COLON', 'T_COMMA', 'T_END',
  'T_WHITESPACE', 'T_ERROR', 'T_UNKNOWN'}

local ESCAPE = {}
for i = 0, 31 do ESCAPE[char(i)] = format('\\u%04x', i) end
ESCAPE['\b'], ESCAPE['\t'], ESCAPE['\n'], ESCAPE['\f'], ESCAPE['\r'] =
  '\\b', '\\t', '\\n', '\\f', '\\r'
ESCAPE['"'], ESCAPE['\\'], ESCAPE['/'], ESCAPE['\127'] = '\\"', '\\\\', '\\/', '\\u007f'

local function json_string(s)
  return '"' .. (gsub(s, '[%z\1-\31"/\\\127]', ESCAPE)) .. '"'
end

local buf, nbuf
local function put(s) nbuf = nbuf + 1; buf[nbuf] = s end

local function encode_exception(tname, reason)
  error('Cannot serialise ' .. tname .. ': ' .. reason, 0)
end

local function json_number(cfg, num)
  if num ~= num or num == huge or num == -huge then
    local inv = cfg.encode_invalid_numbers
    if inv == 0 then encode_exception('number', 'must not be NaN or Inf') end
    if inv ~= 1 then return 'null' end
    if num ~= num then return 'nan' end
  end
  return format(cfg.number_fmt, num)
end

-- (int)(a * b) for ints a, b >= 0: the product's low 32 bits, signed.
local function mul32(a, b)
  local lo = fmod(a * (b % 65536), 4294967296)
  local hi = fmod(fmod(a * floor(b / 65536), 65536) * 65536, 4294967296)
  return toint(lo + hi)
end

-- lua_array_length: the array's size, or -1 for an object.
local function array_length(cfg, t)
  local max, items = 0, 0
  for k in next, t do
    if type(k) == 'number' and k ~= 0 and floor(k) == k and k >= 1 then
      if k > max then max = k < 2147483648 and k or -2147483648 end
      items = items + 1
    else
      return -1
    end
  end
  local ratio = cfg.sparse_ratio
  if ratio > 0 and max > mul32(items, ratio) and max > cfg.sparse_safe then
    if cfg.sparse_convert == 0 then encode_exception('table', 'excessively sparse array') end
    return -1
  end
  return max
end

-- depth counts tables; slots is what Redis's C stack holds at this value (for the
-- lua_checkstack that also ends deep nesting).
local encode_value
local function encode_table(cfg, t, depth, slots)
  depth = depth + 1
  if depth > cfg.encode_max_depth or slots + 3 > MAXSTACK then
    error(format('Cannot serialise, excessive nesting (%d)', depth), 0)
  end
  local len = array_length(cfg, t)
  if len > 0 then
    put('[')
    for i = 1, len do
      if i > 1 then put(',') end
      encode_value(cfg, rawget(t, i), depth, slots + 1)
    end
    put(']')
    return
  end
  put('{')
  local comma = false
  for k, v in next, t do
    if comma then put(',') else comma = true end
    local kt = type(k)
    if kt == 'number' then
      put('"' .. json_number(cfg, k) .. '":')
    elseif kt == 'string' then
      put(json_string(k) .. ':')
    else
      encode_exception(kt, 'table key must be a number or string')
    end
    encode_value(cfg, v, depth, slots + 2)
  end
  put('}')
end

function encode_value(cfg, v, depth, slots)
  local t = type(v)
  if t == 'string' then
    put(json_string(v))
  elseif t == 'number' then
    put(json_number(cfg, v))
  elseif t == 'boolean' then
    put(v and 'true' or 'false')
  elseif t == 'table' then
    encode_table(cfg, v, depth, slots)
  elseif t == 'nil' or v == null then
    put('null')
  else
    encode_exception(t, 'type not supported')
  end
end

-- Decoding: S is the text up to its first NUL (where the C parser stops), P the 0-based
-- position in it, DCFG the configuration.
local S, P, DCFG

local CH2TOKEN = {[123] = T_OBJ_BEGIN, [125] = T_OBJ_END, [91] = T_ARR_BEGIN,
  [93] = T_ARR_END, [44] = T_COMMA, [58] = T_COLON}
for i = 1, 19 do CH2TOKEN[byte('fiINnt"+-0123456789', i)] = T_UNKNOWN end
local ESCAPE2CHAR = {[34] = '"', [92] = '\\', [47] = '/', [98] = '\b', [116] = '\t',
  [110] = '\n', [102] = '\f', [114] = '\r', [117] = 'u'}

local function hex4(p)
  local s = sub(S, p + 1, p + 4)
  if #s < 4 or find(s, '[^%x]') then return nil end
  return tonumber(s, 16)
end

local function utf8(cp)
  if cp <= 0x7F then return char(cp) end
  if cp <= 0x7FF then return char(0xC0 + floor(cp / 64), 0x80 + cp % 64) end
  if cp <= 0xFFFF then
    return char(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
  end
  return char(0xF0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64,
              0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
end

-- json_append_unicode_escape, P at the backslash: the UTF-8 bytes, or nil.
local function unicode_escape()
  local cp = hex4(P + 2)
  if not cp then return nil end
  local len = 6
  if cp >= 0xD800 and cp <= 0xDFFF then
    if cp >= 0xDC00 then return nil end
    if byte(S, P + 7) ~= 92 or byte(S, P + 8) ~= 117 then return nil end
    local lo = hex4(P + 8)
    if not lo or lo < 0xDC00 or lo > 0xDFFF then return nil end
    cp = (cp - 0xD800) * 1024 + (lo - 0xDC00) + 0x10000
    len = 12
  end
  P = P + len
  return utf8(cp)
end

local function string_token()
  local start = P
  P = P + 1
  local parts, np = {}, 0
  while true do
    local a = find(S, '["\\]', P + 1)
    if a == nil then
      P = #S
      return T_ERROR, 'unexpected end of string', P
    end
    if a > P + 1 then np = np + 1; parts[np] = sub(S, P + 1, a - 1) end
    P = a - 1
    if byte(S, a) == 34 then
      P = a
      return T_STRING, concat(parts, '', 1, np), start
    end
    local ch = ESCAPE2CHAR[byte(S, a + 1) or 0]
    if ch == 'u' then
      ch = unicode_escape()
      if not ch then return T_ERROR, 'invalid unicode escape code', P end
    elseif ch == nil then
      return T_ERROR, 'invalid escape code', P
    else
      P = P + 2
    end
    np = np + 1
    parts[np] = ch
  end
end

-- json_is_invalid_number: what strtod reads but JSON does not allow.
local function is_invalid_number(p)
  local c = byte(S, p + 1) or 0
  if c == 43 then return true end
  if c == 45 then p = p + 1; c = byte(S, p + 1) or 0 end
  if c == 48 then
    local c2 = byte(S, p + 2) or 0
    return c2 == 120 or c2 == 88 or (c2 >= 48 and c2 <= 57)
  elseif c <= 57 or c >= 128 then
    return false
  end
  local w = lower(sub(S, p + 1, p + 3))
  return w == 'inf' or w == 'nan'
end

-- How many bytes glibc's strtod reads of s from i (1-based): sign, then infinity, NaN
-- (with its optional "(chars)"), hexadecimal or decimal with optional exponent.
local function strtod_len(s, i)
  local j = i
  local c = byte(s, j)
  if c == 43 or c == 45 then j = j + 1 end
  local w = lower(sub(s, j, j + 7))
  if sub(w, 1, 3) == 'inf' then
    return (w == 'infinity' and j + 8 or j + 3) - i
  end
  if sub(w, 1, 3) == 'nan' then
    local k = j + 3
    if byte(s, k) == 40 then
      local _, e = find(s, '^[%w_]*%)', k + 1)
      if e then return e + 1 - i end
    end
    return k - i
  end
  local digits, expo = '^%d*', 101
  local k = j
  if byte(s, j) == 48 and (byte(s, j + 1) == 120 or byte(s, j + 1) == 88) then
    digits, expo, k = '^%x*', 112, j + 2
  end
  local _, e = find(s, digits, k)
  local nd = e - k + 1
  k = e + 1
  if byte(s, k) == 46 then
    local _, e2 = find(s, digits, k + 1)
    if nd + e2 - k > 0 then
      nd = nd + e2 - k
      k = e2 + 1
    end
  end
  if nd == 0 then
    if expo == 112 then return j + 1 - i end  -- "0x" without digits: the "0"
    return 0
  end
  local ec = byte(s, k)
  if ec == expo or ec == expo - 32 then
    local _, e3 = find(s, '^[+-]?%d+', k + 1)
    if e3 then k = e3 + 1 end
  end
  return k - i
end

local function number_token()
  local len = strtod_len(S, P + 1)
  local v = len > 0 and tonumber(sub(S, P + 1, P + len))
  if not v then return T_ERROR, 'invalid number', P end
  local start = P
  P = P + len
  return T_NUMBER, v, start
end

-- json_next_token: type, value and index (where an error was found, for T_ERROR).
local function next_token()
  local c = byte(S, P + 1)
  while c == 32 or c == 9 or c == 10 or c == 13 do
    P = P + 1
    c = byte(S, P + 1)
  end
  if c == nil then return T_END, nil, P end
  local tt = CH2TOKEN[c]
  if tt == nil then return T_ERROR, 'invalid token', P end
  if tt ~= T_UNKNOWN then
    P = P + 1
    return tt, nil, P - 1
  end
  if c == 34 then return string_token() end
  if c == 45 or (c >= 48 and c <= 57) then
    if DCFG.decode_invalid_numbers == 0 and is_invalid_number(P) then
      return T_ERROR, 'invalid number', P
    end
    return number_token()
  end
  if sub(S, P + 1, P + 4) == 'true' then
    P = P + 4
    return T_BOOLEAN, true, P - 4
  end
  if sub(S, P + 1, P + 5) == 'false' then
    P = P + 5
    return T_BOOLEAN, false, P - 5
  end
  if sub(S, P + 1, P + 4) == 'null' then
    P = P + 4
    return T_NULL, nil, P - 4
  end
  if DCFG.decode_invalid_numbers ~= 0 and is_invalid_number(P) then return number_token() end
  return T_ERROR, 'invalid token', P
end

local function throw(expected, tt, tv, ti)
  local found = tt == T_ERROR and tv or TOKEN_NAME[tt]
  error(format('Expected %s but found %s at character %d', expected, found, ti + 1), 0)
end

local function descend(depth, slots)
  if depth > DCFG.decode_max_depth or slots > MAXSTACK then
    error(format('Found too many nested data structures (%d) at character %d', depth, P), 0)
  end
end

local process_value
local function parse_object(depth, slots)
  depth = depth + 1
  descend(depth, slots + 3)
  local t = {}
  local tt, tv, ti = next_token()
  if tt == T_OBJ_END then return t end
  while true do
    if tt ~= T_STRING then throw('object key string', tt, tv, ti) end
    local key = tv
    tt, tv, ti = next_token()
    if tt ~= T_COLON then throw('colon', tt, tv, ti) end
    t[key] = process_value(depth, slots + 2, next_token())
    tt, tv, ti = next_token()
    if tt == T_OBJ_END then return t end
    if tt ~= T_COMMA then throw('comma or object end', tt, tv, ti) end
    tt, tv, ti = next_token()
  end
end

local function parse_array(depth, slots)
  depth = depth + 1
  descend(depth, slots + 2)
  local t = {}
  local tt, tv, ti = next_token()
  if tt == T_ARR_END then return t end
  local i = 1
  while true do
    t[i] = process_value(depth, slots + 1, tt, tv, ti)
    tt, tv, ti = next_token()
    if tt == T_ARR_END then return t end
    if tt ~= T_COMMA then throw('comma or array end', tt, tv, ti) end
    tt, tv, ti = next_token()
    i = i + 1
  end
end

function process_value(depth, slots, tt, tv, ti)
  if tt == T_STRING or tt == T_NUMBER or tt == T_BOOLEAN then return tv end
  if tt == T_OBJ_BEGIN then return parse_object(depth, slots) end
  if tt == T_ARR_BEGIN then return parse_array(depth, slots) end
  if tt == T_NULL then return null end
  throw('value', tt, tv, ti)
end

local BOOL_OPTIONS = {[0] = 'off', 'on'}
local INVALID_OPTIONS = {[0] = 'off', 'on', 'null'}

local function too_many(n, max)
  if n > max then argerror(max + 1, 'found too many arguments') end
end

-- json_integer_option (its range error names argument 1 whatever the argument).
local function integer_option(cfg, key, i, n, v, min, max)
  if v ~= nil then
    local value = toint(checkinteger(i, n, v))
    if value < min or value > max then
      argerror(1, format('expected integer between %d and %d', min, max))
    end
    cfg[key] = value
  end
  return cfg[key]
end

-- json_enum_option with bool_true 1: a boolean, or one of the option names.
local function enum_option(cfg, key, i, n, v, options)
  if v ~= nil then
    if type(v) == 'boolean' then
      cfg[key] = v and 1 or 0
    else
      local name = checklstring(i, n, v)
      name = sub(name, 1, (find(name, '\0', 1, true) or #name + 1) - 1)
      local setting
      for k = 0, #options do
        if options[k] == name then setting = k end
      end
      if setting == nil then argerror(i, "invalid option '" .. name .. "'") end
      cfg[key] = setting
    end
  end
  local s = cfg[key]
  if s == 0 or s == 1 then return s == 1 end
  return options[s]
end

local cjson_new
function cjson_new()
  local cfg = {sparse_convert = 0, sparse_ratio = 2, sparse_safe = 10,
               encode_max_depth = 1000, decode_max_depth = 1000,
               encode_invalid_numbers = 0, decode_invalid_numbers = 1,
               encode_keep_buffer = 1, encode_number_precision = 14, number_fmt = '%.14g'}
  local lib = {}
  define(lib, 'encode', function(...)
    if select('#', ...) ~= 1 then argerror(1, 'expected 1 argument') end
    buf, nbuf = {}, 0
    encode_value(cfg, (...), 0, 1)
    local s = concat(buf, '', 1, nbuf)
    buf = nil
    return s
  end)
  define(lib, 'decode', function(...)
    local n = select('#', ...)
    if n ~= 1 then argerror(1, 'expected 1 argument') end
    local s = checklstring(1, n, (...))
    if #s >= 2 and (byte(s, 1) == 0 or byte(s, 2) == 0) then
      error('JSON parser does not support UTF-16 or UTF-32', 0)
    end
    local z = find(s, '\0', 1, true)
    if z then s = sub(s, 1, z - 1) end
    S, P, DCFG = s, 0, cfg
    local v = process_value(0, 1, next_token())
    local tt, tv, ti = next_token()
    if tt ~= T_END then throw('the end', tt, tv, ti) end
    S = nil
    return v
  end)
  define(lib, 'encode_sparse_array', function(...)
    local n, a, b, c = select('#', ...), ...
    too_many(n, 3)
    return enum_option(cfg, 'sparse_convert', 1, n, a, BOOL_OPTIONS),
           integer_option(cfg, 'sparse_ratio', 2, n, b, 0, INT_MAX),
           integer_option(cfg, 'sparse_safe', 3, n, c, 0, INT_MAX)
  end)
  for _, key in ipairs({'encode_max_depth', 'decode_max_depth'}) do
    define(lib, key, function(...)
      local n, a = select('#', ...), ...
      too_many(n, 1)
      return integer_option(cfg, key, 1, n, a, 1, INT_MAX)
    end)
  end
  define(lib, 'encode_number_precision', function(...)
    local n, a = select('#', ...), ...
    too_many(n, 1)
    local p = integer_option(cfg, 'encode_number_precision', 1, n, a, 1, 14)
    cfg.number_fmt = '%.' .. p .. 'g'
    return p
  end)
  define(lib, 'encode_keep_buffer', function(...)
    local n, a = select('#', ...), ...
    too_many(n, 1)
    return enum_option(cfg, 'encode_keep_buffer', 1, n, a, BOOL_OPTIONS)
  end)
  define(lib, 'encode_invalid_numbers', function(...)
    local n, a = select('#', ...), ...
    too_many(n, 1)
    return enum_option(cfg, 'encode_invalid_numbers', 1, n, a, INVALID_OPTIONS)
  end)
  define(lib, 'decode_invalid_numbers', function(...)
    local n, a = select('#', ...), ...
    too_many(n, 1)
    return enum_option(cfg, 'decode_invalid_numbers', 1, n, a, BOOL_OPTIONS)
  end)
  define(lib, 'new', function() return cjson_new() end)
  lib.null = null
  lib._NAME = 'cjson'
  lib._VERSION = '2.1.0'
  return lib
end

return cjson_new()
"""

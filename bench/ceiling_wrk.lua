-- bench/ceiling_wrk.lua: wrk script for bench-ceiling.sh (run with -t1). Each request
-- places an order (POST <path>) with the next pre-minted token: a distinct user per
-- request. args: path token_file limit stamp_prefix
--   A token line "<token>\t<solution>" (seckill-order token --challenge) sends the
--   solution as the Seckill-Challenge header (the accept_challenge row, issue 31).
--   limit 0: the tokens wrap when used up (a repeated user then gets 409 duplicate);
--   limit N: N orders, one per token, then GET /healthz until the N-th order's answer
--   is in (answers to orders are never 200, /healthz's always is): the script writes
--   the wall-clock ns of its first request and of that answer to <stamp_prefix>.start /
--   .end and stops the thread, so the rate is "to the last answer".
function init(args)
    path = args[1]
    tokens = {}
    solutions = {}
    for line in io.lines(args[2]) do
        local tok, sol = line:match("^([^\t]+)\t(.+)$")
        tokens[#tokens + 1] = "Bearer " .. (tok or line)
        solutions[#tokens] = sol
    end
    limit = tonumber(args[3])
    stamp = args[4]
    if limit > #tokens then
        error("ceiling_wrk.lua: " .. limit .. " orders asked, " .. #tokens .. " tokens")
    end
    sent, answered, i = 0, 0, 0
end

local function now_ns()
    local p = io.popen("date +%s%N")
    local v = p:read("*l")
    p:close()
    return v
end

local function write(name, v)
    local f = io.open(stamp .. name, "w")
    f:write(v, "\n")
    f:close()
end

function headers_of(i)
    return {["Authorization"] = tokens[i], ["Seckill-Challenge"] = solutions[i]}
end

function request()
    if not checked then
        -- wrk calls request() once on thread 0's state to check the script (how many
        -- requests one call returns) before any connection: not a request sent.
        checked = true
        return wrk.format("POST", path, headers_of(1), nil)
    end
    if sent == 0 then
        write(".start", now_ns())
    end
    if limit > 0 and sent >= limit then
        return wrk.format("GET", "/healthz")
    end
    sent = sent + 1
    i = i + 1
    if i > #tokens then
        i = 1
    end
    return wrk.format("POST", path, headers_of(i), nil)
end

function response(status, headers, body)
    if limit == 0 or status == 200 then
        return
    end
    answered = answered + 1
    if answered == limit then
        write(".end", now_ns())
        wrk.thread:stop()
    end
end

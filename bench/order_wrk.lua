-- bench/order_wrk.lua: wrk script for bench-order.sh. Each request places an order
-- (POST /api/v1/events/<id>/orders) with the next pre-minted token, so every request
-- is a distinct user. Thread t of n uses lines t, t+n, t+2n, ... of the token file and
-- reads only those (memory stays one copy of the file in all).
-- args: path token_file nthreads
local counter = 0

function setup(thread)
    thread:set("tid", counter)
    counter = counter + 1
end

function init(args)
    path = args[1]
    local n = tonumber(args[3])
    tokens = {}
    local line_no = 0
    for line in io.lines(args[2]) do
        if line_no % n == tid then
            tokens[#tokens + 1] = "Bearer " .. line
        end
        line_no = line_no + 1
    end
    i = 0
end

function request()
    i = i + 1
    if i > #tokens then
        i = 1 -- wrapped: users repeat from here on (the script says so at the end)
        wrapped = true
    end
    return wrk.format("POST", path, {["Authorization"] = tokens[i]}, nil)
end

function done(summary, latency, requests)
    -- wrk's own summary has the figures bench-order.sh parses.
end

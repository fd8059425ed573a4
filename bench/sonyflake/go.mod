module seckill/bench/sonyflake

go 1.19

require github.com/sony/sonyflake v1.2.0

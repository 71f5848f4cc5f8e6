module example.com/gostats

go 1.19

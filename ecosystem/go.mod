module github.com/kcache/cache/ecosystem

go 1.26.0

gpu.module @m {
}

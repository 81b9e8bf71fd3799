#include <iostream>

int main() {
    std::cout << "iodiag\n";
    return 0;
}
